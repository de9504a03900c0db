// Preloaded (--import) into the test processes when scripts/test.ts measures coverage: node:test hands
// them NODE_V8_COVERAGE, and every process they start (the CLI, workers) would inherit it and collect
// and write coverage too, which slows their start and exit past the tests' deadlines. This process's
// own coverage is already on (read at its start); removing the variable keeps it from its children.
delete process.env.NODE_V8_COVERAGE
