# The two commands the README opens with, and a few more.
.PHONY: run test bench bench-1gb bench-compare bench-scaleout cover generate

# Run the product on the embedded default: SQLite in ./data, local ledger, demo agents.
run:
	go run ./cmd/countersign serve --demo

# Run every test (SQLite and PostgreSQL, real processes, headless Chromium); the
# browser tests leave a screenshot of every page they visit in ./artifacts. The
# benchmark module (bench/river) is vetted, so it keeps building as the product moves,
# and its tests run: the CI-sized comparison with River (about 10 s; it asserts the
# ratio main reaches today, currentFloorRiverRatio, and logs issue #34's target).
# Then each fuzz target of the request decoders runs 40,000 inputs from its committed
# corpus (handlers/fuzz/testdata/fuzz; a few seconds each on an idle machine); a
# failing input it finds is written there. A count, not a duration: with -fuzztime
# as a duration, Go before 1.27 can fail a target with "context deadline exceeded"
# when the deadline races a busy worker (golang/go#75804), with no failing input.
test:
	go vet ./...
	cd bench/river && go vet ./...
	cd bench/river && go test -count=1 ./...
	COUNTERSIGN_ARTIFACTS=$(CURDIR)/artifacts go test -race -count=1 -timeout 30m ./...
	go test -run '^$$' -fuzz '^FuzzDecodeTask$$' -fuzztime 40000x ./handlers/fuzz/
	go test -run '^$$' -fuzz '^FuzzDecodeGoal$$' -fuzztime 40000x ./handlers/fuzz/
	go test -run '^$$' -fuzz '^FuzzDecodeAgent$$' -fuzztime 40000x ./handlers/fuzz/
	go test -run '^$$' -fuzz '^FuzzDecodeTemplate$$' -fuzztime 40000x ./handlers/fuzz/

# Print every benchmark figure docs/benchmarks.md names (about 5 minutes).
bench:
	go test -run '^$$' -bench Generate ./models/
	go test -run '^$$' -bench . -benchtime 200x ./runner/
	go test -run '^$$' -bench 'RunNoop$$|BareForkExec' ./runner/worker/
	go test -run '^$$' -bench 'JudgeView10k|JudgedRunOverhead|Snapshot10k|GitAddWriteTree10k' -benchtime 3x ./runner/judge/
	go test -run '^$$' -bench 'PublishStored|TaskCompleteBytes' -benchtime 500x ./runner/ledger/
	go test -run '^$$' -bench PublishFaults -benchtime 200x ./runner/ledger/
	go test -run '^$$' -bench Fanout1000 -benchtime 50x ./handlers/live/
	go test -run '^$$' -bench Pages -benchtime 1x -timeout 30m ./handlers/pages/

# Peak memory for a worker printing 1 GB, through the pool and through the bare
# worker package (slow; opt-in).
bench-1gb:
	COUNTERSIGN_BENCH_1GB=1 go test -run '^$$' -bench PeakMemory1GB -benchtime 1x ./runner/
	COUNTERSIGN_BENCH_1GB=1 go test -run '^$$' -bench OneGigabyte -benchtime 1x ./runner/worker/

# Throughput of a bare fork/exec loop, River and the runner pool on the same worker,
# concurrency and PostgreSQL (issue #16; its own module, so River stays out of go.mod),
# then the pool's first 200 completions with 200, 1000 and 10000 pending tasks.
bench-compare:
	cd bench/river && go run ./cmd/bench-compare
	cd bench/river && go run ./cmd/bench-compare -backlog

# One `countersign runner` process with 8 slots against four with 32 on sleep-bound
# tasks (64 tasks/s ideal), and River the same way, each on a fresh database: their
# throughput, lock waits across processes and CPU per task with their PostgreSQL
# backends, beside issue #34's acceptance (about 3 minutes).
bench-scaleout:
	cd bench/river && go run ./cmd/bench-compare -scaleout

# Statement coverage of models and runner across every package's tests: the total,
# then each tree's share (a block counts once, covered if any test binary ran it).
# The tests' output goes to cover.log; a failure prints its lines and stops.
cover:
	go test -count=1 -timeout 30m -coverpkg=./models/...,./runner/... -coverprofile=cover.out ./... >cover.log 2>&1 || \
		{ grep -E '^(--- FAIL|FAIL|panic:)' cover.log; exit 1; }
	go tool cover -func=cover.out | tail -n 1
	awk 'NR > 1 { n[$$1] = $$2; if ($$3 > 0) c[$$1] = 1 } \
		END { for (k in n) { split(k, a, "/"); t[a[4]] += n[k]; if (c[k]) v[a[4]] += n[k] } \
		for (p in t) printf "%s/...\t%.1f%%\n", p, 100 * v[p] / t[p] }' cover.out | sort

# Regenerate templ components (the generated files are committed).
generate:
	go run github.com/a-h/templ/cmd/templ@v0.3.977 generate
