# The two commands the README opens with, and a few more.
.PHONY: run test bench bench-1gb generate vet

# Run the product on the embedded default: SQLite in ./data, local ledger, demo agents.
run:
	go run ./cmd/countersign serve --demo

# Run every test (SQLite and PostgreSQL, real processes, headless Chromium).
test:
	go vet ./...
	go test -race -count=1 -timeout 20m ./...

# Print every benchmark figure the README names.
bench:
	go test -run '^$$' -bench . -benchtime 1x -timeout 30m ./...

# Peak memory for a worker printing 1 GB (slow; opt-in).
bench-1gb:
	COUNTERSIGN_BENCH_1GB=1 go test -run '^$$' -bench OneGigabyte -benchtime 1x ./runner/...

# Regenerate templ components (the generated files are committed).
generate:
	go run github.com/a-h/templ/cmd/templ@v0.3.977 generate
