package config

import (
	"time"

	"github.com/hashicorp/hcl/v2"
)

// Retention is the retention block: how long `queuectl run` keeps finished
// jobs (by state) and the captured output of attempts. Unset (zero) keeps
// them forever.
type Retention struct {
	Completed time.Duration
	Dead      time.Duration
	Cancelled time.Duration
	Output    time.Duration
}

var retentionSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "completed"}, {Name: "dead"}, {Name: "cancelled"}, {Name: "output"},
}}

func (d *decoder) decodeRetention(b *hcl.Block) Retention {
	content, diags := b.Body.Content(retentionSchema)
	d.diags = append(d.diags, diags...)
	var r Retention
	for _, a := range []struct {
		name string
		dst  *time.Duration
	}{{"completed", &r.Completed}, {"dead", &r.Dead}, {"cancelled", &r.Cancelled}, {"output", &r.Output}} {
		name, dst := a.name, a.dst
		attr, ok := content.Attributes[name]
		if !ok {
			continue
		}
		v, valid := d.duration(attr)
		switch {
		case !valid:
		case v <= 0:
			d.attrError(attr, "Invalid retention", name+" must be a positive duration such as \"7d\"; leave it out to keep forever.")
		default:
			*dst = v
		}
	}
	return r
}
