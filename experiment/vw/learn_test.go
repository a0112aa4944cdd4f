package vw

import (
	"errors"
	"strings"
	"testing"

	"dprl/internal/fielderr"
)

func TestParseLearners(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    int
		wantErr string
	}{
		{args: nil, want: 0},
		{args: []string{"--squarecb -q UA", "--epsilon 0.05"}, want: 2},
		{args: []string{"--squarecb", " "}, wantErr: `Learners " ": want VW arguments`},
		{args: []string{"--daemon -q UA"}, wantErr: `Learners "--daemon -q UA": vw: learner argument --daemon is set by the driver`},
	} {
		ls, err := ParseLearners(tc.args)
		if tc.wantErr != "" {
			if fe := (*fielderr.Error)(nil); !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Errorf("ParseLearners(%q) = %v, want a *fielderr.Error starting %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(ls) != tc.want {
			t.Errorf("ParseLearners(%q) = %v, %v, want %d learners", tc.args, ls, err, tc.want)
		}
	}
}
