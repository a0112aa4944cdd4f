package sac

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"

	"dprl/internal/lebytes"
	"dprl/ledger"
	"dprl/policy"
)

// ErrSnapshot marks every error of LoadActor: truncated, wrong magic or
// version, checksum mismatch, inconsistent or non-finite fields.
var ErrSnapshot = errors.New("sac: bad actor snapshot")

// snapshotMagic starts every actor snapshot; the byte after it is the
// format version: 2 (written) carries the actor's provenance, 1 (read
// only, written before) does not.
const (
	snapshotMagic   = "DPRLSACA"
	snapshotVersion = 2
	snapshotV1      = 1
	maxDim          = 1 << 16
)

// MarshalActor returns the agent's actor as a self-contained snapshot
// with its provenance p (validated: ledger.Provenance.Validate): magic,
// version, the provenance (ledger.Provenance.AppendBinary), the
// observation and action
// dimensions, the hidden widths, the action box's scale and bias, the
// parameters (float64; everything little-endian), and a CRC-32C of
// everything before it. LoadActor reads it back.
func (a *Agent) MarshalActor(p ledger.Provenance) ([]byte, error) {
	b, err := p.AppendBinary(append([]byte(snapshotMagic), snapshotVersion))
	if err != nil {
		return nil, fmt.Errorf("sac: actor snapshot: %w", err)
	}
	u32 := func(v int) { b = binary.LittleEndian.AppendUint32(b, uint32(v)) }
	f64 := func(v float64) { b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v)) }
	u32(a.obsDim)
	u32(a.actDim)
	u32(len(a.cfg.Hidden))
	for _, h := range a.cfg.Hidden {
		u32(h)
	}
	for j := range a.actDim {
		f64(a.scale[j])
		f64(a.bias[j])
	}
	u32(len(a.actorP))
	for _, v := range a.actorP {
		f64(v)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))), nil
}

// Actor is a released SAC policy: it serves actions and nothing else. Not
// safe for concurrent use (one per goroutine: Clone).
type Actor struct {
	obsDim, actDim int
	hidden         []int
	scale, bias    []float64
	params         []float64
	net            *policy.MLP
	out            []float64
	prov           ledger.Provenance
	provKnown      bool
}

// Provenance returns the actor's provenance; ok is false for a version 1
// snapshot, written before provenance was recorded.
func (a *Actor) Provenance() (p ledger.Provenance, ok bool) { return a.prov, a.provKnown }

// LoadActor parses and checks a snapshot written by MarshalActor, or a
// version 1 snapshot (no provenance: Actor.Provenance says so). Every
// error wraps ErrSnapshot; an invalid provenance is one.
func LoadActor(data []byte) (*Actor, error) {
	bad := func(f string, a ...any) (*Actor, error) {
		return nil, fmt.Errorf("%w: "+f, append([]any{ErrSnapshot}, a...)...)
	}
	if len(data) < len(snapshotMagic)+1+4 {
		return bad("%d bytes, too short", len(data))
	}
	if string(data[:len(snapshotMagic)]) != snapshotMagic {
		return bad("not an actor snapshot (magic %q)", data[:len(snapshotMagic)])
	}
	v := data[len(snapshotMagic)]
	if v != snapshotVersion && v != snapshotV1 {
		return bad("format version %d, this build reads %d and %d", v, snapshotV1, snapshotVersion)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)); got != sum {
		return bad("checksum %08x, stored %08x", got, sum)
	}
	p := body[len(snapshotMagic)+1:]
	a := &Actor{}
	if v == snapshotVersion {
		prov, rest, err := ledger.ReadProvenance(p)
		if err != nil {
			return bad("%v", err)
		}
		a.prov, a.provKnown, p = prov, true, rest
	}
	r := lebytes.NewReader(p)
	u32, f64 := r.U32, r.F64
	od, ok1 := u32()
	ad, ok2 := u32()
	nh, ok3 := u32()
	if !ok1 || !ok2 || !ok3 || od < 1 || ad < 1 || od > maxDim || ad > maxDim || nh < 1 || nh > 64 {
		return bad("dimensions obs %d, actions %d, %d hidden layers", od, ad, nh)
	}
	a.obsDim, a.actDim = od, ad
	for range nh {
		h, ok := u32()
		if !ok || h < 1 || h > maxDim {
			return bad("hidden width %d", h)
		}
		a.hidden = append(a.hidden, h)
	}
	for range ad {
		s, ok1 := f64()
		c, ok2 := f64()
		if !ok1 || !ok2 || !(s > 0) || math.IsInf(s, 0) || math.IsNaN(c) || math.IsInf(c, 0) {
			return bad("action scale %v and bias %v", s, c)
		}
		a.scale, a.bias = append(a.scale, s), append(a.bias, c)
	}
	net, err := policy.NewMLPActivation(policy.ReLU, append(append([]int{od}, a.hidden...), 2*ad)...)
	if err != nil {
		return bad("%v", err)
	}
	n, ok := u32()
	if !ok || n != net.NumParams() || r.Len() != 8*n {
		return bad("%d parameters in %d bytes, the network has %d", n, r.Len(), net.NumParams())
	}
	a.params = make([]float64, n)
	for i := range a.params {
		v, _ := f64()
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return bad("parameter %d is %v", i, v)
		}
		a.params[i] = v
	}
	a.net, a.out = net, make([]float64, 2*ad)
	if err := a.checkFinite(); err != nil {
		return bad("%v", err)
	}
	return a, nil
}

// maxActorOutput bounds the network's outputs at the probe observations:
// far beyond a trained actor's (a mean past 20 is already tanh's 1), and
// small enough that the action and its log density (squares, exponentials
// of the clamped log std) stay finite.
const maxActorOutput = 1e100

// checkFinite refuses an actor whose network outputs are not finite, or
// beyond maxActorOutput, at the probe observations (zeros, all +1, all -1):
// finite but huge weights (1e308) pass the parameter check and would then
// fail every act with an internal error.
func (a *Actor) checkFinite() error {
	obs := make([]float64, a.obsDim)
	for _, v := range []float64{0, 1, -1} {
		for i := range obs {
			obs[i] = v
		}
		a.net.Forward(a.out, a.params, obs)
		for _, o := range a.out {
			if !(math.Abs(o) <= maxActorOutput) {
				return fmt.Errorf("the network's output at the observation of all %v is %v, not finite or beyond %g (parameters too large)", v, o, maxActorOutput)
			}
		}
	}
	return nil
}

// ObsDim and ActDim return the actor's dimensions.
func (a *Actor) ObsDim() int { return a.obsDim }

// ActDim returns the action dimension.
func (a *Actor) ActDim() int { return a.actDim }

// ActDeterministic writes the policy's mean action for obs into dst.
func (a *Actor) ActDeterministic(dst, obs []float64) {
	a.net.Forward(a.out, a.params, obs)
	for j := range a.actDim {
		dst[j] = a.scale[j]*math.Tanh(a.out[j]) + a.bias[j]
	}
}

// Act writes an action sampled with rng into dst and returns its log
// density in the action box.
func (a *Actor) Act(dst []float64, rng *rand.Rand, obs []float64) float64 {
	a.net.Forward(a.out, a.params, obs)
	var logp float64
	for j := range a.actDim {
		ls := logStd(a.out[a.actDim+j])
		e := rng.NormFloat64()
		u := a.out[j] + math.Exp(ls)*e
		dst[j] = a.scale[j]*math.Tanh(u) + a.bias[j]
		logp += -0.5*e*e - ls - halfLog2Pi - 2*(ln2-u-softplus(-2*u)) - math.Log(a.scale[j])
	}
	return logp
}

// Clone returns an actor that shares a's parameters (never modified after
// LoadActor) with workspaces of its own, for another goroutine.
func (a *Actor) Clone() *Actor {
	net, err := policy.NewMLPActivation(policy.ReLU, append(append([]int{a.obsDim}, a.hidden...), 2*a.actDim)...)
	if err != nil {
		panic(err) // the sizes were checked by LoadActor
	}
	c := *a
	c.net, c.out = net, make([]float64, 2*a.actDim)
	return &c
}

// Box returns the action box the actor's actions lie in: low = bias -
// scale and high = bias + scale in each dimension (new slices).
func (a *Actor) Box() (low, high []float64) {
	low, high = make([]float64, a.actDim), make([]float64, a.actDim)
	for j := range a.actDim {
		low[j], high[j] = a.bias[j]-a.scale[j], a.bias[j]+a.scale[j]
	}
	return low, high
}

// LogDensity returns the log-density in the action box of action act at
// obs, the value Act returns with the action it samples: e.g. to check a
// logged behaviour log-probability, or to reweight logged sessions. An
// action on or outside the box's boundary has density 0 (-Inf).
func (a *Actor) LogDensity(obs, act []float64) float64 {
	a.net.Forward(a.out, a.params, obs)
	var logp float64
	for j := range a.actDim {
		y := (act[j] - a.bias[j]) / a.scale[j]
		if !(y > -1 && y < 1) {
			return math.Inf(-1)
		}
		u := math.Atanh(y)
		ls := logStd(a.out[a.actDim+j])
		e := (u - a.out[j]) / math.Exp(ls)
		logp += -0.5*e*e - ls - halfLog2Pi - 2*(ln2-u-softplus(-2*u)) - math.Log(a.scale[j])
	}
	return logp
}
