"""The research harness: the naive baseline, the fake agent, the bot user, the load generator,
the demo and every benchmark (bench/). Imports anything below it, never cli."""
