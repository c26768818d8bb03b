"""Golden cases: the corpus (data folders), their truth and its scoring. Imports only core."""
