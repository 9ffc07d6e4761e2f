package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// DeletableStates checks the states asked for deletion; an empty list
// means every finished state.
func DeletableStates(states []State) ([]State, error) {
	if len(states) == 0 {
		return []State{StateCompleted, StateDead, StateCancelled}, nil
	}
	for _, st := range states {
		if !st.Finished() {
			return nil, fmt.Errorf("%w: state %s is not finished (allowed: completed, dead, cancelled)", ErrInvalid, st)
		}
	}
	return states, nil
}

// Retention says how long finished jobs, and the captured output of
// attempts, are kept. A zero duration keeps them forever.
type Retention struct {
	Completed time.Duration
	Dead      time.Duration
	Cancelled time.Duration
	Output    time.Duration // output of any attempt; the job and its history stay
}

// PrunerConfig configures a Pruner.
type PrunerConfig struct {
	Retention Retention
	Every     time.Duration // how often to prune; default one minute
	Batch     int           // rows per transaction; default 500
	Now       func() time.Time
	Log       zerolog.Logger
}

// Pruner applies a Retention to a store: jobs and output past their age go,
// in transactions of at most Batch rows, so that no prune holds the write
// lock long enough to stall workers. Several pruners may share a store.
type Pruner struct {
	st  Store
	cfg PrunerConfig
}

// NewPruner returns a pruner; it does nothing until Run or PruneOnce.
func NewPruner(st Store, cfg PrunerConfig) *Pruner {
	if cfg.Every <= 0 {
		cfg.Every = time.Minute
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 500
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	return &Pruner{st: st, cfg: cfg}
}

// Pruned counts what one pass removed.
type Pruned struct {
	Jobs    map[State]int
	Outputs int
}

// Run prunes at once and then every cfg.Every until ctx ends. Errors are
// logged; the next pass tries again.
func (p *Pruner) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.Every)
	defer t.Stop()
	for {
		res, err := p.PruneOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			p.cfg.Log.Error().Err(err).Msg("retention: prune failed; trying again later")
		case res.Outputs > 0 || len(res.Jobs) > 0:
			ev := p.cfg.Log.Info().Int("outputs", res.Outputs)
			for st, n := range res.Jobs {
				ev = ev.Int(string(st), n)
			}
			ev.Msg("retention: pruned")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// PruneOnce removes everything past its age now, batch by batch.
func (p *Pruner) PruneOnce(ctx context.Context) (Pruned, error) {
	res := Pruned{Jobs: map[State]int{}}
	now := p.cfg.Now()
	r := p.cfg.Retention
	for _, k := range []struct {
		state State
		age   time.Duration
	}{{StateCompleted, r.Completed}, {StateDead, r.Dead}, {StateCancelled, r.Cancelled}} {
		if k.age <= 0 {
			continue
		}
		n, err := p.batches(ctx, func() (int, error) {
			return p.st.DeleteJobs(ctx, DeleteParams{Before: now.Add(-k.age), States: []State{k.state}, Limit: p.cfg.Batch})
		})
		if n > 0 {
			res.Jobs[k.state] = n
		}
		if err != nil {
			return res, fmt.Errorf("retention of %s jobs: %w", k.state, err)
		}
	}
	if r.Output > 0 {
		n, err := p.batches(ctx, func() (int, error) {
			return p.st.PruneOutput(ctx, PruneOutputParams{Before: now.Add(-r.Output), Limit: p.cfg.Batch})
		})
		res.Outputs = n
		if err != nil {
			return res, fmt.Errorf("retention of output: %w", err)
		}
	}
	return res, nil
}

// batches calls one until it changes nothing, and returns the total. Each
// call is its own transaction: between them other writers get the lock.
// A batch short of p.cfg.Batch does not mean the last: a row found but
// changed before it was locked (a job retried, output another pruner
// emptied) is left out of its batch, not replaced.
func (p *Pruner) batches(ctx context.Context, one func() (int, error)) (int, error) {
	total := 0
	for ctx.Err() == nil {
		n, err := one()
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
	return total, ctx.Err()
}
