.PHONY: test bench man install

# Unit and end-to-end tests with the race detector.
test:
	go test -race ./...

# Compare queuectl with xargs -P, task-spooler, nq and River in one run and
# write the table into docs/benchmarks.md. Settings: RUNS, JOBS, WORKERS,
# PG_URL, QUICK (see bench/compare), e.g. make bench RUNS=5.
bench:
	bench/compare

# Install queuectl into $(go env GOPATH)/bin (or $GOBIN).
install:
	go install ./cmd/queuectl

# Man pages, one per command, generated from the commands' help into man/
# (the man command is built only with -tags man).
man:
	go run -tags man ./cmd/queuectl man man
