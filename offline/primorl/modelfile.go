package primorl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"dprl/internal/lebytes"
	"dprl/ledger"
	"dprl/sims"
)

// ErrModelFile marks every error of LoadModel: truncated, wrong magic or
// version, checksum mismatch, inconsistent or non-finite fields.
var ErrModelFile = errors.New("primorl: bad model file")

// The model file's magic, format version and bounds.
const (
	modelMagic   = "DPRLPMOD"
	modelVersion = 1
	maxModelEnv  = 64      // bytes of the environment's name
	maxModels    = 1 << 10 // models in the ensemble
	maxModelDim  = 1 << 16 // a hidden width, an input or target dimension
)

// MarshalModel returns the released ensemble (e, params) of a run on env
// as a self-contained file with its provenance p (validated:
// ledger.Provenance.AppendBinary): magic, version, the provenance, the
// environment's name (a length byte and the name), the ensemble's size,
// hidden widths and log-variance bounds, its input and target dimensions,
// the parameters (float64; everything little-endian) and a CRC-32C of
// everything before it. LoadModel reads it back.
//
// The ensemble is the run's release: a policy trained in it later
// (dprl offline primorl --model) is post-processing and carries p.
func MarshalModel(env string, e *Ensemble, params []float64, p ledger.Provenance) ([]byte, error) {
	if len(env) == 0 || len(env) > maxModelEnv {
		return nil, fmt.Errorf("primorl: model file: environment name %q", env)
	}
	if len(params) != e.NumParams() {
		return nil, fmt.Errorf("primorl: model file: %d parameters, the ensemble has %d", len(params), e.NumParams())
	}
	b, err := p.AppendBinary(append([]byte(modelMagic), modelVersion))
	if err != nil {
		return nil, fmt.Errorf("primorl: model file: %w", err)
	}
	u32 := func(v int) { b = binary.LittleEndian.AppendUint32(b, uint32(v)) }
	f64 := func(v float64) { b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v)) }
	b = append(append(b, byte(len(env))), env...)
	u32(e.cfg.Ensemble)
	u32(len(e.cfg.Hidden))
	for _, h := range e.cfg.Hidden {
		u32(h)
	}
	f64(e.cfg.MaxLogVar)
	f64(e.cfg.MinLogVar)
	u32(e.in)
	u32(e.out)
	u32(len(params))
	for _, v := range params {
		f64(v)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))), nil
}

// Model is a released ensemble read back by LoadModel.
type Model struct {
	// Env is the simulator the ensemble models.
	Env string
	// Ensemble and Params are the ensemble and its parameters.
	Ensemble *Ensemble
	Params   []float64
	// Provenance is the guarantee of the run that released it.
	Provenance ledger.Provenance
}

// LoadModel parses and checks a file written by MarshalModel: the
// environment must be one PriMORL knows, with the ensemble's dimensions
// its observation and action spaces give, and every parameter finite.
// Every error wraps ErrModelFile; an invalid provenance is one.
func LoadModel(data []byte) (*Model, error) {
	bad := func(f string, a ...any) (*Model, error) {
		return nil, fmt.Errorf("%w: "+f, append([]any{ErrModelFile}, a...)...)
	}
	if len(data) < len(modelMagic)+1+4 {
		return bad("%d bytes, too short", len(data))
	}
	if string(data[:len(modelMagic)]) != modelMagic {
		return bad("not a PriMORL model file (magic %q)", data[:len(modelMagic)])
	}
	if v := data[len(modelMagic)]; v != modelVersion {
		return bad("format version %d, this build reads %d", v, modelVersion)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)); got != sum {
		return bad("checksum %08x, stored %08x", got, sum)
	}
	prov, p, err := ledger.ReadProvenance(body[len(modelMagic)+1:])
	if err != nil {
		return bad("%v", err)
	}
	r := lebytes.NewReader(p)
	u32, f64 := r.U32, r.F64
	ln, ok := r.Bytes(1)
	var name []byte
	if ok {
		name, ok = r.Bytes(int(ln[0]))
	}
	if !ok {
		return bad("truncated environment name")
	}
	env := string(name)
	info, ok := sims.Lookup(env)
	if _, err := PublicScales(env); !ok || err != nil {
		return bad("environment %q: PriMORL models pendulum, cartpole-balance and cartpole-swingup", env)
	}
	spec := info.New()
	od, ad := spec.ObservationSpace().Dim(), spec.ActionSpace().Dim()
	var cfg ModelConfig
	n, ok1 := u32()
	nh, ok2 := u32()
	if !ok1 || !ok2 || n < 1 || n > maxModels || nh < 1 || nh > 64 {
		return bad("%d models of %d hidden layers", n, nh)
	}
	cfg.Ensemble = n
	for range nh {
		h, ok := u32()
		if !ok || h < 1 || h > maxModelDim {
			return bad("hidden width %d", h)
		}
		cfg.Hidden = append(cfg.Hidden, h)
	}
	cfg.MaxLogVar, _ = f64()
	cfg.MinLogVar, _ = f64()
	in, ok1 := u32()
	out, ok2 := u32()
	if !ok1 || !ok2 || in != od+ad || out != od+1 {
		return bad("input and target dimensions %d and %d, %s's are %d and %d", in, out, env, od+ad, od+1)
	}
	e, err := NewEnsemble(cfg, in, out)
	if err != nil {
		return bad("%v", err)
	}
	np, ok := u32()
	if !ok || np != e.NumParams() || r.Len() != 8*np {
		return bad("%d parameters in %d bytes, the ensemble has %d", np, r.Len(), e.NumParams())
	}
	params := make([]float64, np)
	for i := range params {
		v, _ := f64()
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return bad("parameter %d is %v", i, v)
		}
		params[i] = v
	}
	return &Model{Env: env, Ensemble: e, Params: params, Provenance: prov}, nil
}
