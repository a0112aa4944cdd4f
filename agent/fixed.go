package agent

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"dprl/ledger"
	"dprl/policy"
	"dprl/policy/qnet"
	"dprl/policy/sac"
)

// FixedPolicy is a released policy the agent serves as it is (dprl agent
// --serve-policy FILE; Config.Fixed): a SAC actor (continuous actions,
// logged with their log-density) or a Q-network policy of dprl offline
// learn --out (the greedy action, filtered by the imitation network for
// BCQ, logged with probability 1). Sessions obey every limit and go to the
// session log, but no update is made and no budget is spent: serving is
// post-processing, and the guarantee is the one the snapshot records
// (Provenance); one that records none is served only with ServeNonPrivate
// and labelled NOT private (docs/privacy.md, section 9). The ledger is
// still opened (lock, user key); the learner's settings do not apply.
type FixedPolicy struct {
	// Actor, for a SAC actor, serves the actions; its dimensions must
	// match Config.Spec, which must have continuous actions.
	Actor *sac.Actor
	// Q, for a Q-network policy, serves the actions; its observation
	// length and action count must match Config.Spec, which must have
	// discrete actions. Exactly one of Actor and Q is set.
	Q *qnet.Snapshot
	// Source names where the policy came from (its file), for the log.
	Source string
	// CRC is the CRC-32C of the snapshot's bytes, for the log and
	// /status: it identifies the release served.
	CRC uint32
	// Provenance is the snapshot's provenance, as it records it; Known is
	// false for a snapshot written before snapshots recorded it (a
	// dprl.qlearn.v1 file, a version 1 SAC actor), whose guarantee is
	// unknown.
	Provenance ledger.Provenance
	Known      bool
	// ServeNonPrivate is the operator's explicit consent to serve a
	// snapshot that is not private or has no provenance (dprl agent
	// --serve-non-private); Config.Validate refuses such a snapshot
	// without it.
	ServeNonPrivate bool
}

// Private reports whether the snapshot records that it is a
// differentially private release.
func (f *FixedPolicy) Private() bool { return f.Known && f.Provenance.Private }

// Label describes the snapshot's guarantee for people (start line,
// /status, the status page): "a fixed offline release, (epsilon 10, delta
// 1e-05)-DP per expert (ledger entry 3)", or "NOT private: ..." with the
// reason.
func (f *FixedPolicy) Label() string {
	switch {
	case f.Private():
		return "a fixed offline release, " + f.Provenance.String()
	case f.Known:
		return "NOT private: trained without differential privacy (--non-private or --mopo)"
	default:
		return "NOT private: the snapshot records no provenance (written before snapshots recorded their guarantee)"
	}
}

// LoadFixedPolicy reads the policy snapshot in file path: a Q-network
// policy (qnet.ParseSnapshot, JSON) or else a SAC actor
// (sac.LoadActor). A missing or unreadable file, or a snapshot that does
// not parse, is an error.
func LoadFixedPolicy(path string) (*FixedPolicy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agent: fixed policy: %w", err)
	}
	return ParseFixedPolicy(b, path)
}

// FixedPolicyKinds says which snapshots a fixed policy may be, for errors.
const FixedPolicyKinds = "a fixed policy is a Q-network policy (JSON, dprl.qlearn.v2, written by dprl offline learn --out) or a SAC actor (binary, written by dprl offline primorl --out)"

// ParseFixedPolicy is LoadFixedPolicy of a snapshot already read; source
// names where it came from.
func ParseFixedPolicy(b []byte, source string) (*FixedPolicy, error) {
	f, err := DecodeFixedPolicy(b, source)
	if err != nil {
		return nil, fmt.Errorf("agent: fixed policy %s: %w (%s)", source, err, FixedPolicyKinds)
	}
	return f, nil
}

// DecodeFixedPolicy is ParseFixedPolicy with the snapshot decoder's error
// as it is, for a caller that names the setting itself. A snapshot that starts with "{" is a Q-network policy (JSON), any
// other a SAC actor (binary).
func DecodeFixedPolicy(b []byte, source string) (*FixedPolicy, error) {
	f := &FixedPolicy{Source: source, CRC: crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		q, _, err := qnet.ParseSnapshot(b)
		if err != nil {
			return nil, err
		}
		f.Q = q
		f.Provenance, f.Known = q.Provenance()
		return f, nil
	}
	act, err := sac.LoadActor(b)
	if err != nil {
		return nil, err
	}
	f.Actor = act
	f.Provenance, f.Known = act.Provenance()
	return f, nil
}

// Collectors are the gauges of the snapshot's provenance:
// dprl_fixed_policy_private (1 for a private snapshot, 0 for one that is
// NOT private or records no provenance) and, for a private one,
// dprl_fixed_policy_epsilon and dprl_fixed_policy_delta, labelled with
// the unit and the ledger entry that charged it.
func (f *FixedPolicy) Collectors() []prometheus.Collector {
	priv := prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_fixed_policy_private",
		Help: "1 when the fixed policy served (--serve-policy) records that it is a differentially private release, 0 when it is NOT private (--serve-non-private)."})
	if !f.Private() {
		return []prometheus.Collector{priv}
	}
	priv.Set(1)
	p := f.Provenance
	labels := prometheus.Labels{"unit": string(p.Unit), "ledger_entry": strconv.FormatUint(p.LedgerSeq, 10)}
	eps := prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_fixed_policy_epsilon", ConstLabels: labels,
		Help: "Epsilon per unit of the fixed policy served, as its snapshot records it (the offline run's charge, ledger entry ledger_entry)."})
	delta := prometheus.NewGauge(prometheus.GaugeOpts{Name: "dprl_fixed_policy_delta", ConstLabels: labels,
		Help: "Delta of the fixed policy served, as its snapshot records it."})
	eps.Set(p.Epsilon)
	delta.Set(p.Delta)
	return []prometheus.Collector{priv, eps, delta}
}

// ServingNote says what serving the snapshot spends and covers.
func (f *FixedPolicy) ServingNote() string {
	if f.Private() {
		return "it never learns and spends no privacy budget (serving a DP release is post-processing: what is served is covered by the release's guarantee)"
	}
	return "served because the operator gave --serve-non-private: it never learns, and what it serves is covered by no privacy guarantee"
}

// ID is the served snapshot's identity on /status and in the log:
// "sac-actor crc32c:XXXXXXXX", or "qlearn-cql crc32c:XXXXXXXX" (bcq).
func (f *FixedPolicy) ID() string {
	if f.Q != nil {
		return fmt.Sprintf("qlearn-%s crc32c:%08x", f.Q.Algo, f.CRC)
	}
	return fmt.Sprintf("sac-actor crc32c:%08x", f.CRC)
}

// Kind names the snapshot's policy for messages.
func (f *FixedPolicy) Kind() string {
	if f.Q != nil {
		return "a greedy " + strings.ToUpper(string(f.Q.Algo)) + " Q-network policy (discrete actions)"
	}
	return "a SAC actor (continuous actions)"
}

// Dims returns the snapshot's observation length and its number of
// discrete actions (Q) or action values (SAC), and says which in words.
func (f *FixedPolicy) Dims() (obs, act int, text string) {
	if f.Q != nil {
		return f.Q.ObsDim, f.Q.Actions, fmt.Sprintf("obs dim %d, %d actions", f.Q.ObsDim, f.Q.Actions)
	}
	return f.Actor.ObsDim(), f.Actor.ActDim(), fmt.Sprintf("obs dim %d, action dim %d", f.Actor.ObsDim(), f.Actor.ActDim())
}

// check reports a fixed policy that cannot serve spec: another kind of
// actions, or other dimensions.
func (f *FixedPolicy) check(spec policy.Spec) error {
	if f.Q != nil {
		if spec.Kind != policy.ActionDiscrete {
			return fmt.Errorf("a Q-network policy serves discrete actions, the spec has %v actions", spec.Kind)
		}
		if f.Q.ObsDim != spec.ObsDim || f.Q.Actions != spec.NumActions {
			return fmt.Errorf("the snapshot has %d observation values and %d actions, the spec %d and %d",
				f.Q.ObsDim, f.Q.Actions, spec.ObsDim, spec.NumActions)
		}
		return nil
	}
	if spec.Kind != policy.ActionContinuous {
		return fmt.Errorf("a SAC actor serves continuous actions, the spec has %v actions", spec.Kind)
	}
	if f.Actor.ObsDim() != spec.ObsDim || f.Actor.ActDim() != spec.ActionDim {
		return fmt.Errorf("the snapshot has %d observation values and %d action values, the spec %d and %d",
			f.Actor.ObsDim(), f.Actor.ActDim(), spec.ObsDim, spec.ActionDim)
	}
	return nil
}

// runFixed is Run for a fixed policy: only the idle sweeper runs, there
// is no updater.
func (a *Agent) runFixed(ctx context.Context) error {
	sweep := time.NewTicker(max(min(a.cfg.IdleTimeout, a.cfg.MaxSessionLifetime)/4, 10*time.Millisecond))
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sweep.C:
			a.sweep()
		}
	}
}
