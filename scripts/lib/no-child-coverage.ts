// Preloaded (--import) into the test file processes of a covered run of scripts/test.ts that starts a
// process per file (node:test loads it in those processes, not in the runner): the runner hands them
// NODE_V8_COVERAGE, and every process they start (the CLI, workers) would inherit it and collect and
// write coverage too, which slows their start and exit past the tests' deadlines. This process's
// own coverage is already on (read at its start); removing the variable keeps it from its children,
// and from the worker threads it starts, which copy the environment as it is then.
delete process.env.NODE_V8_COVERAGE
