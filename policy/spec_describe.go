package policy

import "fmt"

// Describe returns the spec in words for operators: "obs dim 4, 2 actions"
// (discrete) or "obs dim 3, action dim 1" (continuous).
func (s Spec) Describe() string {
	if s.Kind == ActionDiscrete {
		return fmt.Sprintf("obs dim %d, %d actions", s.ObsDim, s.NumActions)
	}
	return fmt.Sprintf("obs dim %d, action dim %d", s.ObsDim, s.ActionDim)
}
