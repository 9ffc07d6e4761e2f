package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/queuectl/queuectl/internal/duration"
)

// decodeQueue decodes a queue block. ok is false when the block cannot be
// used at all (bad or duplicate name); its body is still checked.
func (d *decoder) decodeQueue(b *hcl.Block, seen map[string]hcl.Range) (q Queue, ok bool) {
	ok = d.checkName(b, "queue", seen)
	content, diags := b.Body.Content(queueSchema)
	d.diags = append(d.diags, diags...)
	q = Queue{Name: b.Labels[0], Concurrency: DefaultConcurrency}
	if attr, found := content.Attributes["concurrency"]; found {
		if n, valid := d.intIn(attr, 1, MaxConcurrency, fmt.Sprintf("from 1 to %d", MaxConcurrency)); valid {
			q.Concurrency = n
		}
	}
	d.queueLimits(&q, content.Attributes)
	q.Retry = d.retry(content.Attributes)
	return q, ok
}

// queueLimits decodes a queue's global limits.
func (d *decoder) queueLimits(q *Queue, attrs hcl.Attributes) {
	if attr, found := attrs["max_running"]; found {
		rng := fmt.Sprintf("from 0 (no limit) to %d", maxRunningLimit)
		if n, valid := d.intIn(attr, 0, maxRunningLimit, rng); valid {
			q.MaxRunning = n
		}
	}
	if attr, found := attrs["rate_limit"]; found {
		if s, valid := d.str(attr); valid {
			n, per, err := duration.ParseRate(s)
			if err != nil {
				d.attrError(attr, "Invalid rate_limit", strings.ToUpper(err.Error()[:1])+err.Error()[1:]+".")
			} else {
				q.RateCount, q.RatePer = n, per
			}
		}
	}
}

// maxRunningLimit bounds max_running, as the CLI does.
const maxRunningLimit = 1_000_000

// MaxConcurrency bounds the slots of one queue of a service, as it bounds
// worker start --concurrency: each slot may hold a shell.
const MaxConcurrency = 1000
