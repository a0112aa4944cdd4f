package audit

import "fmt"

// Fault is a deliberate miscalibration of a real mechanism, for the
// auditor's power: the real code path (the same aggregator, clip, noise
// sampler and training step as production) run with one parameter off by a
// factor of two, while the claim stays the one the correct parameters
// earn. The faults are set only by the harnesses of this package, through
// the parameters the mechanisms already take (a noise multiplier, a clip
// norm); no production path can reach them.
type Fault int

// The faults.
const (
	// FaultNone is the real mechanism.
	FaultNone Fault = iota
	// FaultNoiseHalf runs the mechanism with half the noise multiplier
	// the claim was calibrated to: mu doubles.
	FaultNoiseHalf
	// FaultSensitivityDouble clips at 2C while the noise is the one
	// calibrated for C (the multiplier halved, so that the noise's
	// standard deviation z C is unchanged): a contribution can move the
	// release twice as far as the accounting assumes, and mu doubles.
	FaultSensitivityDouble
)

// Faults lists the miscalibrations every mechanism is audited with.
var Faults = []Fault{FaultNoiseHalf, FaultSensitivityDouble}

// String names the fault.
func (f Fault) String() string {
	switch f {
	case FaultNone:
		return "none"
	case FaultNoiseHalf:
		return "noise / 2"
	case FaultSensitivityDouble:
		return "sensitivity x 2"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// scales returns the factors the fault applies to the noise multiplier and
// to the clip norm.
func (f Fault) scales() (noise, clip float64, err error) {
	switch f {
	case FaultNone:
		return 1, 1, nil
	case FaultNoiseHalf:
		return 0.5, 1, nil
	case FaultSensitivityDouble:
		return 0.5, 2, nil
	}
	return 0, 0, fmt.Errorf("audit: unknown fault %d", int(f))
}

// name returns the target name of a mechanism's harness with the fault.
func (f Fault) name(mechanism string) string {
	if f == FaultNone {
		return mechanism
	}
	return "mutant: " + mechanism + ", " + f.String()
}

// shift returns in - out, the white-box projection direction.
func shift(in, out []float64) []float64 {
	d := make([]float64, len(in))
	for i := range d {
		d[i] = in[i] - out[i]
	}
	return d
}
