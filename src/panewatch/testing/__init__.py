"""What tests and captures use, and users may too: mock model servers, agent homes, the PTY
driver, capture and its truth, the headless real-agent runner. Imports runtime, golden, core."""
