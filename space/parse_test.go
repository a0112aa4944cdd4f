package space

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseActions(t *testing.T) {
	disc := Space{Kind: Discrete, N: 3}
	box := Space{Kind: Box, Low: []float64{-2, 0}, High: []float64{2, 1}}
	for _, tc := range []struct {
		name, in string
		sp       Space
		want     []Action
		err      string
	}{
		{"discrete", "0, 2,1", disc, []Action{{Index: 0}, {Index: 2}, {Index: 1}}, ""},
		{"box", "0.5:1, -2:0", box, []Action{{Vec: []float64{0.5, 1}}, {Vec: []float64{-2, 0}}}, ""},
		{"empty", "  ", disc, nil, "--actions is empty"},
		{"not-integer", "0,1.5", disc, nil, `--actions: step 1: "1.5" is not an integer action in [0, 3)`},
		{"index-out-of-range", "3", disc, nil, "--actions: step 0: space: bad action: index 3 outside [0, 3)"},
		{"negative", "-1", disc, nil, "outside [0, 3)"},
		{"empty-step", "0,,1", disc, nil, `step 1: "" is not an integer`},
		{"box-components", "1", box, nil, `--actions: step 0: "1" has 1 components, want 2 (join components with ':')`},
		{"box-nan", "NaN:0", box, nil, `--actions: step 0: "NaN" is not a finite number`},
		{"box-inf", "0:+Inf", box, nil, `"+Inf" is not a finite number`},
		{"box-bounds", "0:1.5", box, nil, "--actions: step 0: component 1 = 1.5 outside [0, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseActions("--actions", tc.in, tc.sp)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
