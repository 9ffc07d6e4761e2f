.PHONY: test bench

# Unit and end-to-end tests with the race detector.
test:
	go test -race ./...

# Compare queuectl with xargs -P, task-spooler, nq and River in one run and
# write the table into docs/benchmarks.md. Settings: RUNS, JOBS, WORKERS,
# PG_URL, QUICK (see bench/compare), e.g. make bench RUNS=5.
bench:
	bench/compare
