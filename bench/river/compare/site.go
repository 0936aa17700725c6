package compare

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"

	"golang.org/x/sync/errgroup"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/runner/ledger"
)

// workerRole is the role of the benchmark's worker agent and of every task.
const workerRole = "developer"

// noopContract asks for a clean exit and nothing else: no output file, no verify
// commands (type skip in a project with no always-run activities).
func noopContract() contract.Contract {
	return contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone}, Verification: contract.Verification{Type: contract.VerifySkip}}
}

// site is a Countersign installation built the way the runner's own benchmarks build
// one: a fresh migrated store, the service, a human admin, project rules with no
// always-run activity, one worker agent running Command, and a data dir.
type site struct {
	db      *store.DB
	svc     *models.Service
	boss    *models.Agent
	dataDir string
}

// openSite opens and migrates the store cfg names and sets the site up with one worker
// agent of the given concurrency running Command. A zero cfg means SQLite in the
// site's data dir.
func openSite(ctx context.Context, cfg store.Config, concurrency int) (*site, error) {
	return openSiteWith(ctx, cfg, []*models.Agent{benchAgent("bench", Command, concurrency)})
}

// benchAgent is a worker agent of the benchmark's role.
func benchAgent(name, command string, concurrency int) *models.Agent {
	return &models.Agent{Name: name, Kind: models.KindWorker, Roles: []string{workerRole}, Command: command, Concurrency: concurrency}
}

// openSiteWith is openSite with the given worker agents instead of the one.
func openSiteWith(ctx context.Context, cfg store.Config, workers []*models.Agent) (s *site, err error) {
	dir, err := os.MkdirTemp("", "cs-bench-countersign-")
	if err != nil {
		return nil, err
	}
	if cfg.DatabaseURL == "" && cfg.SQLitePath == "" {
		cfg.SQLitePath = dir + "/countersign.db"
	}
	s = &site{dataDir: dir}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.db, err = store.Open(ctx, cfg); err != nil {
		return nil, err
	}
	if err = s.db.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	s.svc = models.NewService(s.db, ledger.Composer{})
	s.boss = &models.Agent{Name: "boss", Kind: models.KindHuman, Roles: []string{models.RoleAdmin, models.RoleLead, models.RoleExec}}
	if err = s.svc.Agents.CreateAgent(ctx, models.System, s.boss, ""); err != nil {
		return nil, err
	}
	if err = s.svc.Templates.SaveRules(ctx, s.boss, &models.ProjectRules{Rules: contract.Rules{Activities: map[string]string{"unit-test": "true"}}}); err != nil {
		return nil, err
	}
	for _, w := range workers {
		if err = s.svc.Agents.CreateAgent(ctx, s.boss, w, ""); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// createTasks creates n pending no-op tasks through Service.CreateTask, from several
// goroutines on PostgreSQL (one on SQLite, whose writers are serialised anyway).
func (s *site) createTasks(ctx context.Context, n int) error {
	parallel := 1
	if s.db.Dialect() == store.DialectPostgres {
		parallel = 8
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i := range n {
		g.Go(func() error {
			spec := models.TaskSpec{Title: fmt.Sprintf("noop %d", i), Brief: "Do the no-op thing.", Role: workerRole, Contract: noopContract()}
			_, err := s.svc.Tasks.CreateTask(gctx, s.boss, spec)
			return err
		})
	}
	return g.Wait()
}

// close closes the store and removes the data dir.
func (s *site) close() {
	if s.db != nil {
		s.db.Close()
	}
	os.RemoveAll(s.dataDir)
}

// randomID returns 16 random hex digits.
func randomID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
