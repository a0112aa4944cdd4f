package vw

import (
	"bufio"
	"context"
	"errors"
	"math"
	"net"
	"os/exec"
	"strings"
	"testing"
)

func TestAppendExample(t *testing.T) {
	for _, tc := range []struct {
		name  string
		x     []float64
		items int
		lab   *Label
		want  string
		err   string
	}{
		{name: "unlabelled", x: []float64{1, 0, 0.25, -0.5}, items: 3,
			want: "shared |U f0:1 f2:0.25 f3:-0.5\n|A i0\n|A i1\n|A i2\n\n"},
		{name: "labelled click", x: []float64{0, 1}, items: 3, lab: &Label{Index: 2, Cost: -1, Prob: 0.125},
			want: "shared |U f1:1\n|A i0\n|A i1\n2:-1:0.125 |A i2\n\n"},
		{name: "labelled no click", x: []float64{0.5}, items: 2, lab: &Label{Index: 0, Cost: 0, Prob: 1},
			want: "shared |U f0:0.5\n0:0:1 |A i0\n|A i1\n\n"},
		{name: "no exponent", x: []float64{1e-7, -2.5e-8}, items: 1,
			want: "shared |U f0:0.0000001 f1:-0.000000025\n|A i0\n\n"},
		{name: "all features zero", x: []float64{0, 0}, items: 1, want: "shared |U\n|A i0\n\n"},
		{name: "no items", x: []float64{1}, items: 0, err: "0 items"},
		{name: "NaN feature", x: []float64{1, math.NaN()}, items: 2, err: "feature 1 is NaN"},
		{name: "infinite feature", x: []float64{math.Inf(-1)}, items: 2, err: "feature 0 is -Inf"},
		{name: "index out of range", x: []float64{1}, items: 2, lab: &Label{Index: 2, Prob: 0.5}, err: "label index 2 outside [0, 2)"},
		{name: "negative index", x: []float64{1}, items: 2, lab: &Label{Index: -1, Prob: 0.5}, err: "label index -1"},
		{name: "zero probability", x: []float64{1}, items: 2, lab: &Label{Index: 0, Prob: 0}, err: "label probability 0"},
		{name: "probability above 1", x: []float64{1}, items: 2, lab: &Label{Index: 0, Prob: 1.5}, err: "label probability 1.5"},
		{name: "NaN cost", x: []float64{1}, items: 2, lab: &Label{Index: 0, Cost: math.NaN(), Prob: 1}, err: "label cost NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendExample([]byte("prefix|"), tc.x, tc.items, tc.lab)
			if tc.err != "" {
				if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want ErrFormat containing %q", err, tc.err)
				}
				if string(got) != "prefix|" {
					t.Errorf("dst changed on error: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix|"+tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, "prefix|"+tc.want)
			}
		})
	}
}

func TestParsePMF(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply string
		items int
		want  []float64
		err   string
	}{
		{name: "sorted by probability", reply: "2:0.9,0:0.05,1:0.05\n", items: 3, want: []float64{0.05, 0.05, 0.9}},
		{name: "white space and zeros", reply: "  0:1,1:0,2:0 \r\n", items: 3, want: []float64{1, 0, 0}},
		{name: "six digits renormalised", reply: "0:0.333333,1:0.333333,2:0.333333", items: 3, want: []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
		{name: "empty", reply: "\n", items: 2, err: "empty reply"},
		{name: "not a pair", reply: "0.5,0.5", items: 2, err: `pair "0.5" is not action:probability`},
		{name: "action not a number", reply: "a:0.5,1:0.5", items: 2, err: `action "a" is not an item index in [0, 2)`},
		{name: "action out of range", reply: "0:0.5,2:0.5", items: 2, err: `action "2" is not an item index`},
		{name: "probability not a number", reply: "0:x,1:1", items: 2, err: `probability "x" of action 0`},
		{name: "negative probability", reply: "0:-0.1,1:1.1", items: 2, err: `probability "-0.1" of action 0 is not in [0, 1]`},
		{name: "NaN probability", reply: "0:nan,1:1", items: 2, err: `probability "nan"`},
		{name: "duplicate", reply: "0:0.5,0:0.5", items: 2, err: "action 0 appears twice"},
		{name: "missing item", reply: "0:1", items: 2, err: "1 actions, want 2"},
		{name: "not summing to 1", reply: "0:0.5,1:0.4", items: 2, err: "sum to 0.9"},
		{name: "a regression prediction", reply: "0.731", items: 2, err: "is not action:probability"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePMF(nil, []byte(tc.reply), tc.items)
			if tc.err != "" {
				if !errors.Is(err, ErrReply) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want ErrReply containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for a := range tc.want {
				if math.Abs(got[a]-tc.want[a]) > 1e-12 {
					t.Fatalf("pmf %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestSample(t *testing.T) {
	pmf := []float64{0.25, 0, 0.75, 0}
	for _, tc := range []struct {
		u    float64
		want int
	}{{0, 0}, {0.2499, 0}, {0.25, 2}, {0.9999, 2}, {1, 2}} {
		if got := Sample(pmf, tc.u); got != tc.want {
			t.Errorf("Sample(%v, %v) = %d, want %d", pmf, tc.u, got, tc.want)
		}
	}
}

// TestConnBadReplies serves canned replies from a real TCP listener in
// place of the daemon: a reply that is not a PMF and a connection closed
// mid-exchange are named as such.
func TestConnBadReplies(t *testing.T) {
	for _, tc := range []struct {
		name, reply, err string
	}{
		{"regression output", "0.5\n", "is not action:probability"},
		{"too few items", "0:1\n", "1 actions, want 2"},
		{"closed", "", "daemon connection: EOF"},
		{"empty lines then closed", "\n\n", "daemon connection: EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go func() {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				r := bufio.NewReader(c)
				for { // read one multi-line example, up to its empty line
					line, err := r.ReadString('\n')
					if err != nil || line == "\n" {
						break
					}
				}
				c.Write([]byte(tc.reply))
			}()
			d := &Daemon{addr: l.Addr().String(), stderr: &lockedBuffer{}, done: make(chan struct{})}
			close(d.done)
			c, err := d.Dial()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, _, err = c.Predict(nil, nil, []float64{1, 0}, 2)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

// TestStartDaemonExits: a binary that exits at once is reported with its
// exit status instead of a wait for the port.
func TestStartDaemonExits(t *testing.T) {
	bin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false binary")
	}
	_, err = StartDaemon(context.Background(), bin, []string{"--squarecb"})
	if err == nil || !strings.Contains(err.Error(), "exited before serving") {
		t.Fatalf("error %v, want exited before serving", err)
	}
	if _, err := StartDaemon(context.Background(), "/nonexistent/vw", nil); err == nil {
		t.Fatal("no error for a missing binary")
	}
}

func TestLearnerValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--squarecb", "-q", "UA"}, ""},
		{[]string{"--epsilon", "0.05", "-q", "UA", "--cb_type", "dr"}, ""},
		{nil, "without arguments"},
		{[]string{"--squarecb", "--daemon"}, "--daemon is set by the driver"},
		{[]string{"--port", "26542"}, "--port is set by the driver"},
		{[]string{"-d", "train.dat"}, "-d is set by the driver"},
	} {
		err := Learner{Args: tc.args}.Validate()
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.err)
		}
	}
}
