package policy

import "testing"

func TestSpecDescribe(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{ObsDim: 4, Kind: ActionDiscrete, NumActions: 2}, "obs dim 4, 2 actions"},
		{Spec{ObsDim: 3, Kind: ActionContinuous, ActionDim: 1}, "obs dim 3, action dim 1"},
	} {
		if got := c.spec.Describe(); got != c.want {
			t.Errorf("%+v.Describe() = %q, want %q", c.spec, got, c.want)
		}
	}
}
