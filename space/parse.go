package space

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseActions parses a scripted action list against a space: steps
// separated by commas, an integer per step for a discrete space, and for a
// box one number per component (components joined by ':') within the bounds.
// label names the input in error messages (the CLI passes its flag name,
// "--actions"); every error names the step at fault.
func ParseActions(label, s string, sp Space) ([]Action, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%s is empty", label)
	}
	fields := strings.Split(s, ",")
	out := make([]Action, len(fields))
	for i, fld := range fields {
		fld = strings.TrimSpace(fld)
		var act Action
		if sp.Kind == Discrete {
			n, err := strconv.Atoi(fld)
			if err != nil {
				return nil, fmt.Errorf("%s: step %d: %q is not an integer action in [0, %d)", label, i, fld, sp.N)
			}
			act.Index = n
		} else {
			comps := strings.Split(fld, ":")
			if len(comps) != len(sp.Low) {
				return nil, fmt.Errorf("%s: step %d: %q has %d components, want %d (join components with ':')", label, i, fld, len(comps), len(sp.Low))
			}
			act.Vec = make([]float64, len(comps))
			for j, c := range comps {
				v, err := strconv.ParseFloat(strings.TrimSpace(c), 64)
				if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("%s: step %d: %q is not a finite number", label, i, c)
				}
				if v < sp.Low[j] || v > sp.High[j] {
					return nil, fmt.Errorf("%s: step %d: component %d = %v outside [%v, %v]", label, i, j, v, sp.Low[j], sp.High[j])
				}
				act.Vec[j] = v
			}
		}
		if err := CheckAction(sp, act); err != nil {
			return nil, fmt.Errorf("%s: step %d: %w", label, i, err)
		}
		out[i] = act
	}
	return out, nil
}
