package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"
)

// leaseKeeper renews the worker's registration and the leases of the jobs
// it runs. Every heartbeat also brings back what the store asks of this
// worker: attempts whose lease was lost (stopped as lost), attempts with a
// cancel request (stopped as cancelled) and a stop request for the worker.
// Idle workers beat every Lease/3 (at most RegistrationBeat); busy ones every CancelPoll, or at once on
// a wake-up, so that cancel requests take effect quickly.
type leaseKeeper struct {
	store      Store
	clock      Clock
	me         *WorkerInfo // re-registered if another process removed it
	lease      time.Duration
	cancelPoll time.Duration
	running    *runningSet
	wake       chan struct{}
	stopAsked  func() // the store asked this worker to stop
	log        zerolog.Logger
	svc        service
}

// Start starts renewing. It is safe to call twice.
func (k *leaseKeeper) Start() { k.svc.start(k.loop) }

// Stop stops renewing and waits for a heartbeat in flight. It is safe to
// call twice.
func (k *leaseKeeper) Stop() { k.svc.stop() }

// RegistrationBeat is the longest an idle worker goes without renewing its
// registration, whatever its lease, and SilentAfter how old a heartbeat
// must be for other processes to take its worker for silent: they judge
// it without knowing its lease (status, worker stop --all-hosts, and the
// rescuer, which unregisters a silent worker of another host).
const (
	RegistrationBeat = 10 * time.Second
	SilentAfter      = 3 * RegistrationBeat
)

func (k *leaseKeeper) loop(ctx context.Context) {
	every := min(k.lease/3, RegistrationBeat)
	last := time.Now() // monotonic: a step of the wall clock changes no cadence
	repeat(ctx, k.cancelPoll, k.wake, func(ctx context.Context) time.Duration {
		ids := k.running.ids()
		// Idle workers renew only their registration, every Lease/3 (at
		// most RegistrationBeat); busy ones also look for cancel requests
		// every CancelPoll.
		if now := time.Now(); len(ids) > 0 || now.Sub(last) >= every {
			if err := k.heartbeat(ctx, ids); err != nil && ctx.Err() == nil {
				k.log.Warn().Err(err).Msg("heartbeat")
			} else {
				last = now
			}
		}
		return min(k.cancelPoll, every) // a busy worker renews at least every third of the lease
	})
}

// heartbeat renews the registration and the leases of ids, and acts on
// what the store answers.
func (k *leaseKeeper) heartbeat(ctx context.Context, ids []string) error {
	sent, now := time.Now(), k.clock.Now() // sent: monotonic, for the fences
	// One that gets no answer (a connection whose packets a firewall drops)
	// is given up after a quarter of the lease, so that the next ones, on
	// other connections, renew the leases before the fences stop the jobs.
	ctx, cancel := context.WithTimeout(ctx, k.lease/4)
	defer cancel()
	p := HeartbeatParams{Worker: k.me.ID, Jobs: ids, Now: now, LeaseUntil: now.Add(k.lease)}
	res, err := k.store.Heartbeat(ctx, p)
	if errors.Is(err, ErrNotFound) {
		// Another process took this worker for dead (a long pause or a
		// network cut); register again and carry on with what we still hold.
		k.log.Warn().Msg("worker registration was removed; registering again")
		k.me.HeartbeatAt = now
		if err = k.store.RegisterWorker(ctx, k.me); err == nil {
			res, err = k.store.Heartbeat(ctx, p)
		}
	}
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	notRenewed := make(map[string]bool, len(res.Lost)+len(res.Busy))
	for _, id := range slices.Concat(res.Lost, res.Busy) {
		notRenewed[id] = true
	}
	renewed := make([]string, 0, len(ids))
	for _, id := range ids {
		if !notRenewed[id] {
			renewed = append(renewed, id)
		}
	}
	k.running.renewed(renewed, sent, k.lease)
	k.running.stop(res.Lost, OutcomeLost, func(id string) {
		k.log.Warn().Str("job_id", id).Msg("lease lost; stopping the job")
	})
	k.running.stop(res.Cancel, OutcomeCancelled, func(id string) {
		k.log.Info().Str("job_id", id).Msg("cancel requested; stopping the job")
	})
	if res.StopRequested {
		k.stopAsked()
	}
	return nil
}
