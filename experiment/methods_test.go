package experiment

import "testing"

// TestCheckMethod: every method of Methods passes; anything else is
// refused with the list.
func TestCheckMethod(t *testing.T) {
	for _, m := range Methods() {
		if err := CheckMethod(m); err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
	for _, c := range []struct{ m, want string }{
		{"a2c", `"a2c": want dppg, ppo, dppg-loglinear, dpsgd-reinforce, dpsgd-dqn or sac`},
		{"", `"": want dppg, ppo, dppg-loglinear, dpsgd-reinforce, dpsgd-dqn or sac`},
	} {
		if err := CheckMethod(c.m); err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.m, err, c.want)
		}
	}
}
