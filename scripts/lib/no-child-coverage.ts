// Preloaded (--import) into a covered run of scripts/test.ts that starts a process per test file: the
// runner hands NODE_V8_COVERAGE to those processes, and every process they start in turn (the CLI,
// workers) would inherit it and collect and write coverage too, which slows their start and exit
// past the tests' deadlines. A test file's process (node:test marks it with NODE_TEST_CONTEXT)
// already collects its own (read at its start), so removing the variable keeps it from its
// children; the runner keeps it, for the files' processes.
if (process.env.NODE_TEST_CONTEXT !== undefined) delete process.env.NODE_V8_COVERAGE
