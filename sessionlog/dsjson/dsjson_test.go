package dsjson

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dprl/sessionlog"
	"dprl/space"
)

// base is a valid decision: 3 actions, the second chosen.
const base = `{"_label_cost":-1,"_label_probability":0.8,"_label_Action":2,"_labelIndex":1,"EventId":"e1","a":[2,1,3],"p":[0.8,0.1,0.1],"c":{"s":{"x":0.5,"y":2}}}`

// edit returns base with old replaced by new (which must occur).
func edit(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(base, old) {
		t.Fatalf("base has no %q", old)
	}
	return strings.Replace(base, old, new, 1)
}

func readAll(data string, opt ReaderOptions) ([]sessionlog.Session, *Reader, error) {
	r := NewReader(strings.NewReader(data), opt)
	var out []sessionlog.Session
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r, nil
		}
		if err != nil {
			return out, r, err
		}
		out = append(out, s)
	}
}

func TestFields(t *testing.T) {
	step := func(obs []float64, a int, rew, p float64) sessionlog.Step {
		return sessionlog.Step{Obs: obs, Action: space.Action{Index: a}, Reward: rew, LogP: math.Log(p)}
	}
	for _, tc := range []struct {
		name  string
		line  string
		opt   ReaderOptions
		want  sessionlog.Step
		names []string
	}{
		{"base", base, ReaderOptions{}, step([]float64{0.5, 2}, 1, 1, 0.8), []string{"s.x", "s.y"}},
		{"_label_cost is minus the reward", edit(t, `"_label_cost":-1`, `"_label_cost":2.5`), ReaderOptions{}, step([]float64{0.5, 2}, 1, -2.5, 0.8), nil},
		{"zero cost is reward +0", edit(t, `"_label_cost":-1`, `"_label_cost":-0`), ReaderOptions{}, step([]float64{0.5, 2}, 1, 0, 0.8), nil},
		{"_labelIndex alone", `{"_label_cost":0,"_label_probability":1,"_labelIndex":2,"EventId":"e","c":{"f":1}}`, ReaderOptions{}, step([]float64{1}, 2, 0, 1), []string{"f"}},
		{"_label_Action alone", `{"_label_cost":0,"_label_probability":1,"_label_Action":3,"EventId":"e","c":{"f":1}}`, ReaderOptions{}, step([]float64{1}, 2, 0, 1), nil},
		{"_p alias", edit(t, `"p":`, `"_p":`), ReaderOptions{}, step([]float64{0.5, 2}, 1, 1, 0.8), nil},
		{"p float32 spelling", edit(t, `"p":[0.8,`, `"p":[0.80000001,`), ReaderOptions{}, step([]float64{0.5, 2}, 1, 1, 0.8), nil},
		{"bools are 1 and 0", edit(t, `"y":2`, `"y":true,"z":false`), ReaderOptions{}, step([]float64{0.5, 1, 0}, 1, 1, 0.8), []string{"s.x", "s.y", "s.z"}},
		{"keys sorted, indices numeric", edit(t, `"s":{"x":0.5,"y":2}`, `"z":[1,2,3,4,5,6,7,8,9,10,11],"b":{"y":1,"x":2}`), ReaderOptions{},
			step([]float64{2, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 1, 1, 0.8),
			[]string{"b.x", "b.y", "z[0]", "z[1]", "z[2]", "z[3]", "z[4]", "z[5]", "z[6]", "z[7]", "z[8]", "z[9]", "z[10]"}},
		{"_multi after shared", edit(t, `"c":{"s":{"x":0.5,"y":2}}`, `"c":{"_multi":[{"_tag":"t1","i":{"p":3}},{"i":{"p":4}},{"i":{"p":5,"h":true}}],"s":{"x":0.5}}`), ReaderOptions{},
			step([]float64{0.5, 3, 4, 1, 5}, 1, 1, 0.8), []string{"s.x", "_multi[0].i.p", "_multi[1].i.p", "_multi[2].i.h", "_multi[2].i.p"}},
		{"SharedOnly drops _multi features", edit(t, `"c":{"s":{"x":0.5,"y":2}}`, `"c":{"_multi":[{"i":{"p":3}},{"i":{"p":4}},{"i":{"p":5}}],"s":{"x":0.5}}`), ReaderOptions{SharedOnly: true},
			step([]float64{0.5}, 1, 1, 0.8), []string{"s.x"}},
		{"metadata kept out", edit(t, `"EventId":"e1"`, `"EventId":"e1","Timestamp":"2026-01-01T00:00:00Z","Version":"1","VWState":{"m":"x/y"},"_original_label_cost":-1,"o":[{"v":1,"EventId":"e1","ActionTaken":true}],"pdrop":0`), ReaderOptions{},
			step([]float64{0.5, 2}, 1, 1, 0.8), nil},
		{"unknown field ignored on request", edit(t, `"EventId":"e1"`, `"EventId":"e1","Extra":{"k":[1,"x",true]}`), ReaderOptions{IgnoreUnknown: true}, step([]float64{0.5, 2}, 1, 1, 0.8), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss, r, err := readAll(tc.line+"\n", tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(ss) != 1 || len(ss[0].Steps) != 1 || !ss[0].Terminal {
				t.Fatalf("got %+v, want one terminal one-step session", ss)
			}
			got := ss[0].Steps[0]
			if !reflect.DeepEqual(got.Obs, tc.want.Obs) || got.Action.Index != tc.want.Action.Index || got.Reward != tc.want.Reward || (got.Reward == 0 && math.Signbit(got.Reward)) || got.LogP != tc.want.LogP {
				t.Errorf("step %+v, want %+v", got, tc.want)
			}
			if tc.names != nil && !reflect.DeepEqual(r.Features(), tc.names) {
				t.Errorf("features %q, want %q", r.Features(), tc.names)
			}
		})
	}
}

// TestRefusals puts each bad decision on line 2, after a good one, and
// checks the error names line 2 and says what is wrong.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, line, want string
		unsupported      bool
	}{
		{"malformed", `{"_label_cost":-1,`, "invalid JSON", false},
		{"trailing data", base + ` {}`, "trailing data", false},
		{"NaN", edit(t, `"_label_cost":-1`, `"_label_cost":NaN`), "invalid JSON", false},
		{"Inf", edit(t, `"_label_cost":-1`, `"_label_cost":1e999`), "overflows float64", false},
		{"Inf feature", edit(t, `"x":0.5`, `"x":-1e400`), "c: s.x: number -1e400 overflows", false},
		{"null", edit(t, `"_label_cost":-1`, `"_label_cost":null`), "_label_cost: want number, got null", false},
		{"duplicate key", edit(t, `"_label_cost":-1`, `"_label_cost":-1,"_label_cost":5`), "duplicate key", false},
		{"unknown field", edit(t, `"EventId":"e1"`, `"EventId":"e1","Extra":1`), `unknown field "Extra"`, false},
		{"unknown c field", edit(t, `"s":{`, `"_x":1,"s":{`), "c: _x: unknown field", false},
		{"missing cost", edit(t, `"_label_cost":-1,`, ``), "_label_cost: missing", false},
		{"missing probability", edit(t, `"_label_probability":0.8,`, ``), "_label_probability: missing", false},
		{"missing index", edit(t, `"_label_Action":2,"_labelIndex":1,`, ``), "_labelIndex: missing", false},
		{"missing EventId", edit(t, `"EventId":"e1",`, ``), "EventId: missing", false},
		{"empty EventId", edit(t, `"EventId":"e1"`, `"EventId":""`), "EventId: empty", false},
		{"missing c", edit(t, `,"c":{"s":{"x":0.5,"y":2}}`, ``), "c: missing", false},
		{"probability 0", edit(t, `"_label_probability":0.8`, `"_label_probability":0`), "_label_probability: 0, want 0 < p <= 1", false},
		{"probability above 1", edit(t, `"_label_probability":0.8`, `"_label_probability":1.5`), "_label_probability: 1.5", false},
		{"negative probability", edit(t, `"_label_probability":0.8`, `"_label_probability":-0.1`), "_label_probability: -0.1", false},
		{"index and action disagree", edit(t, `"_labelIndex":1`, `"_labelIndex":0`), "_label_Action 2 is not _labelIndex 0 + 1", false},
		{"negative index", `{"_label_cost":0,"_label_probability":1,"_labelIndex":-1,"EventId":"e","c":{"s":{"x":1,"y":2}}}`, "_labelIndex: -1", false},
		{"index out of range", `{"_label_cost":0,"_label_probability":1,"_labelIndex":3,"EventId":"e","a":[4,1,2],"c":{"s":{"x":1,"y":2}}}`, "a: [0]: action id 4 outside 1..3", false},
		{"index beyond _multi", `{"_label_cost":0,"_label_probability":1,"_labelIndex":3,"EventId":"e","c":{"s":{"x":1,"y":2}}}`, "_labelIndex: 3 outside the 3 actions", false},
		{"non-integer index", edit(t, `"_labelIndex":1`, `"_labelIndex":1.5`), "_labelIndex: 1.5 is not an integer", false},
		{"chosen action not first in a", edit(t, `"a":[2,1,3]`, `"a":[1,2,3]`), "a: [0]: 1, but the chosen action is 2", false},
		{"repeated action id", edit(t, `"a":[2,1,3]`, `"a":[2,2,3]`), "a: [1]: action id 2 repeated", false},
		{"a length differs", edit(t, `"a":[2,1,3],"p":[0.8,0.1,0.1]`, `"a":[2,1],"p":[0.8,0.2]`), "2 actions, the first decision had 3", false},
		{"p length", edit(t, `"p":[0.8,0.1,0.1]`, `"p":[0.8,0.2]`), "p: 2 probabilities for 3 actions", false},
		{"p outside [0,1]", edit(t, `"p":[0.8,0.1,0.1]`, `"p":[0.8,1.1,-0.9]`), "p: [1]: 1.1", false},
		{"p sum", edit(t, `"p":[0.8,0.1,0.1]`, `"p":[0.8,0.1,0.2]`), "p: sum 1.1", false},
		{"p[0] not the label's", edit(t, `"p":[0.8,0.1,0.1]`, `"p":[0.1,0.8,0.1]`), "p: [0]: 0.1, but _label_probability is 0.8", false},
		{"p and _p", edit(t, `"p":[0.8,0.1,0.1]`, `"p":[0.8,0.1,0.1],"_p":[0.8,0.1,0.1]`), "_p: both p and _p given", false},
		{"p without a", edit(t, `"a":[2,1,3],`, ``), "p: given without a", false},
		{"pdrop 1", edit(t, `"EventId":"e1"`, `"EventId":"e1","pdrop":1`), "pdrop: 1, want 0 <= pdrop < 1", false},
		{"pdrop varies", edit(t, `"EventId":"e1"`, `"EventId":"e1","pdrop":0.1`), "pdrop: 0.1, the first decision had 0", false},
		{"string feature", edit(t, `"y":2`, `"y":"strng"`), `c: s.y: string feature "strng"`, false},
		{"_text feature", edit(t, `"s":{`, `"_text":"hello","s":{`), "c: _text: unknown field", false},
		{"null feature", edit(t, `"y":2`, `"y":null`), "c: s.y: null", false},
		{"feature missing", edit(t, `,"y":2`, ``), "c: feature s.y of the first decision missing", false},
		{"feature renamed", edit(t, `"y":2`, `"z":2`), "c: obs[1] is s.z, the first decision's is s.y", false},
		{"feature added", edit(t, `"y":2`, `"y":2,"z":3`), "c: feature s.z not in the first decision", false},
		{"no features", edit(t, `"c":{"s":{"x":0.5,"y":2}}`, `"c":{}`), "c: no numeric features", false},
		{"skipLearn not a bool", edit(t, `"EventId":"e1"`, `"EventId":"e1","_skipLearn":1`), "_skipLearn: want boolean", false},
		{"o not objects", edit(t, `"EventId":"e1"`, `"EventId":"e1","o":[1]`), "o: want object", false},
		{"ccb _outcomes", edit(t, `"EventId":"e1"`, `"EventId":"e1","_outcomes":[{"_label_cost":1,"_a":1,"_p":0.5}]`), "_outcomes: ccb/slates not supported", true},
		{"ccb _slots", edit(t, `"s":{`, `"_slots":[{"_id":"s0"}],"s":{`), "c._slots: ccb/slates not supported", true},
		{"slates _slot_id", `{"_label_cost":0,"_label_probability":1,"_labelIndex":0,"EventId":"e","c":{"_multi":[{"_slot_id":0,"f":1}]}}`, "c._multi[0]._slot_id: ccb/slates not supported", true},
		{"cats", edit(t, `"EventId":"e1"`, `"EventId":"e1","_label_ca":{"cost":1,"pdf_value":0.1,"action":185}`), "_label_ca: continuous actions (CATS) not supported", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss, _, err := readAll(base+"\n"+tc.line+"\n", ReaderOptions{Name: "log.dsjson"})
			var le *sessionlog.LineError
			if !errors.As(err, &le) {
				t.Fatalf("got %v (%d sessions), want a line error", err, len(ss))
			}
			if le.Line != 2 || le.Name != "log.dsjson" {
				t.Errorf("error at %s:%d, want log.dsjson:2: %v", le.Name, le.Line, err)
			}
			if !strings.HasPrefix(err.Error(), "log.dsjson:2: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if errors.Is(err, ErrUnsupported) != tc.unsupported || errors.Is(err, ErrFormat) == tc.unsupported {
				t.Errorf("error %v: ErrUnsupported %v, want %v", err, errors.Is(err, ErrUnsupported), tc.unsupported)
			}
		})
	}
}

func TestLineTooLong(t *testing.T) {
	_, _, err := readAll(base+"\n"+base+"\n", ReaderOptions{MaxLineBytes: len(base) + 1})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Replace(base, `"e1"`, `"e1`+strings.Repeat("x", 100)+`"`, 1)
	_, _, err = readAll(base+"\n"+long+"\n", ReaderOptions{MaxLineBytes: len(base) + 1})
	var le *sessionlog.LineError
	if !errors.Is(err, ErrTooLong) || !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("got %v, want ErrTooLong at line 2", err)
	}
}

// TestSample reads testdata/sample.dsjson, a log in the shape of the
// examples on the Vowpal Wabbit wiki's "DSJSON" page
// (https://github.com/VowpalWabbit/vowpal_wabbit/wiki/DSJSON) and of Azure
// Personalizer's logs, with numeric features: shared features, _multi with
// _tag, o, VWState, Timestamp, _original_label_cost and a _skipLearn line.
// The same file is examples/vw-decisions.dsjson, which docs/offline.md
// imports.
func TestSample(t *testing.T) {
	b, err := os.ReadFile("testdata/sample.dsjson")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := os.ReadFile("../../examples/vw-decisions.dsjson")
	if err != nil || !bytes.Equal(b, ex) {
		t.Errorf("examples/vw-decisions.dsjson differs from testdata/sample.dsjson (%v)", err)
	}
	ss, r, err := readAll(string(b), ReaderOptions{Name: "sample.dsjson"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 4 || r.Skipped() != 1 || r.Actions() != 4 || r.PDrop() != 0 {
		t.Fatalf("%d sessions, %d skipped, %d actions, pdrop %v; want 4, 1, 4, 0", len(ss), r.Skipped(), r.Actions(), r.PDrop())
	}
	wantNames := []string{"User.age", "User.returning", "User.visits[0]", "User.visits[1]", "User.visits[2]",
		"_multi[0].i.hot", "_multi[0].i.price", "_multi[1].i.hot", "_multi[1].i.price",
		"_multi[2].i.hot", "_multi[2].i.price", "_multi[3].i.hot", "_multi[3].i.price"}
	if !reflect.DeepEqual(r.Features(), wantNames) {
		t.Errorf("features %q, want %q", r.Features(), wantNames)
	}
	type row struct {
		id     string
		action int
		reward float64
		prob   float64
		age    float64
	}
	want := []row{
		{"8d5a3f2e6b0f4f8a9c1d2e3f4a5b6c7d", 3, 1, 0.85, 34},
		{"1f2e3d4c5b6a47988796a5b4c3d2e1f0", 0, 0, 0.05, 27},
		{"5e6f7a8b9c0d41e2a3b4c5d6e7f8a9b0", 2, 0.5, 0.05, 19},
		{"c9d8e7f6a5b44c3d2e1f0a9b8c7d6e5f", 3, 1, 0.85, 42},
	}
	for i, w := range want {
		s := ss[i]
		st := s.Steps[0]
		if s.Session != w.id || st.Action.Index != w.action || st.Reward != w.reward || st.LogP != math.Log(w.prob) || st.Obs[0] != w.age || len(st.Obs) != len(wantNames) {
			t.Errorf("session %d: %+v, want %+v", i, s, w)
		}
	}
}

// TestVWTestDecision reads the decision of VW's own parser test
// (ParseDsjsonCb): it has string features, which are refused naming the
// line and path, and reads once they are made numeric.
func TestVWTestDecision(t *testing.T) {
	line := `{"_label_cost":-1,"_label_probability":0.8166667,"_label_Action":2,"_labelIndex":1,"Version":"1","EventId":"0074434d3a3a46529f65de8a59631939","a":[2,1,3],"c":{"shared_ns":{"shared_feature":0},"_multi":[{"_tag":"tag","ns1":{"f1":1,"f2":"strng"},"ns2":[{"f3":"value1"},{"ns3":{"f4":0.994963765}}]},{"_tag":"tag","ns1":{"f1":1,"f2":"strng"}},{"_tag":"tag","ns1":{"f1":1,"f2":"strng"}}]},"p":[0.816666663,0.091666667,0.091666667],"VWState":{"m":"096200c6c41e42bbb879c12830247637/0639c12bea464192828b250ffc389657"}}`
	_, _, err := readAll("\n"+line, ReaderOptions{Name: "vw"})
	if err == nil || !strings.HasPrefix(err.Error(), `vw:2: `) || !strings.Contains(err.Error(), `c: _multi[0].ns1.f2: string feature "strng"`) {
		t.Fatalf("got %v", err)
	}
	numeric := strings.NewReplacer(`"strng"`, `1`, `"value1"`, `2`).Replace(line)
	ss, r, err := readAll(numeric, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := ss[0].Steps[0]; st.Action.Index != 1 || st.Reward != 1 || math.Abs(math.Exp(st.LogP)-0.8166667) > 1e-12 || r.Actions() != 3 {
		t.Errorf("got %+v", ss[0])
	}
}

// TestRoundTrip imports the sample, exports it and imports the export
// (SharedOnly): the sessions are the same, and exporting them again gives
// the same bytes.
func TestRoundTrip(t *testing.T) {
	in, err := os.Open("testdata/sample.dsjson")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var log1 bytes.Buffer
	st, err := Import(in, &log1, ReaderOptions{SharedOnly: true})
	if err != nil || st.Decisions != 4 || st.SkippedLearn != 1 || st.Actions != 4 {
		t.Fatalf("import: %+v, %v", st, err)
	}
	var ds1 bytes.Buffer
	if _, err := Export(bytes.NewReader(log1.Bytes()), &ds1, "log1", st.Actions); err != nil {
		t.Fatal(err)
	}
	var log2 bytes.Buffer
	if _, err := Import(bytes.NewReader(ds1.Bytes()), &log2, ReaderOptions{SharedOnly: true}); err != nil {
		t.Fatalf("import of the export: %v\n%s", err, ds1.String())
	}
	a := readLog(t, log1.Bytes())
	b := readLog(t, log2.Bytes())
	if len(a) != len(b) {
		t.Fatalf("%d sessions, then %d", len(a), len(b))
	}
	for i := range a {
		sa, sb := a[i].Steps[0], b[i].Steps[0]
		if a[i].Session != b[i].Session || !reflect.DeepEqual(sa.Obs, sb.Obs) || sa.Action.Index != sb.Action.Index || sa.Reward != sb.Reward || math.Abs(sa.LogP-sb.LogP) > 1e-12 {
			t.Errorf("session %d: %+v, then %+v", i, a[i], b[i])
		}
		if sessionlog.ContentHash(&a[i]) != sessionlog.ContentHash(&b[i]) {
			t.Errorf("session %d: content hash changed", i)
		}
	}
	var ds2 bytes.Buffer
	if _, err := Export(bytes.NewReader(log2.Bytes()), &ds2, "log2", st.Actions); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ds1.Bytes(), ds2.Bytes()) {
		t.Errorf("second export differs:\n%s\n%s", ds1.String(), ds2.String())
	}
	// Without SharedOnly the export's per-action features are obs columns.
	_, r, err := readAll(ds1.String(), ReaderOptions{})
	if err != nil || len(r.Features()) != 5+4 {
		t.Errorf("features %q, %v", r.Features(), err)
	}
}

func readLog(t *testing.T, b []byte) []sessionlog.Session {
	t.Helper()
	r := sessionlog.NewReader(bytes.NewReader(b), sessionlog.ReaderOptions{})
	var out []sessionlog.Session
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
}

func TestExportRefusals(t *testing.T) {
	for _, tc := range []struct{ name, log, want string }{
		{"multi-step", `{"session":"s1","steps":[{"obs":[1],"action":0,"reward":1,"prob":0.5}],"terminal":true}
{"session":"s2","steps":[{"obs":[1],"action":0,"reward":1,"prob":0.5},{"obs":[2],"action":1,"reward":0,"prob":0.5}],"terminal":true}`, `log:2: dsjson: cannot export: session "s2": 2 steps`},
		{"continuous", `{"session":"c1","steps":[{"obs":[1],"action":[0.5],"reward":1,"prob":0.5}],"terminal":true}`, `log:1: `},
		{"action out of range", `{"session":"s3","steps":[{"obs":[1],"action":5,"reward":1,"prob":0.5}],"terminal":true}`, `log:1: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Export(strings.NewReader(tc.log), &out, "log", 3)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	// The writer refuses a step without a probability, naming the session.
	w := NewWriter(io.Discard, 2)
	s := sessionlog.Session{Session: "np", Steps: []sessionlog.Step{{Obs: []float64{1}, NoProb: true, LogP: math.NaN()}}, Terminal: true}
	if err := w.Write(&s); !errors.Is(err, ErrExport) || !strings.Contains(err.Error(), `session "np": no behaviour probability`) {
		t.Errorf("got %v", err)
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	log, ds := filepath.Join(dir, "log.jsonl"), filepath.Join(dir, "out.dsjson")
	if _, err := ImportFile("testdata/sample.dsjson", log, ReaderOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sessionlog.DatasetID(log); err != nil {
		t.Fatal(err)
	}
	if st, err := ExportFile(log, ds, 4); err != nil || st.Decisions != 4 {
		t.Fatalf("%+v %v", st, err)
	}
	bad := filepath.Join(dir, "bad.dsjson")
	if err := os.WriteFile(bad, []byte(base+"\n{"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bad.jsonl")
	if _, err := ImportFile(bad, out, ReaderOptions{}); err == nil || !strings.HasPrefix(err.Error(), bad+":2: ") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed import left %s: %v", out, err)
	}
}

// TestExportIDs writes ids that Go's quoting would spell with \U escapes
// (not JSON) and reads them back.
func TestExportIDs(t *testing.T) {
	for _, id := range []string{"tag\U000E0001", "a\u2028b", `q"uo\te`, "é<&>"} {
		var b bytes.Buffer
		w := NewWriter(&b, 2)
		s := sessionlog.Session{Session: id, Steps: []sessionlog.Step{{Obs: []float64{1}, Action: space.Action{Index: 1}, Reward: 1, LogP: math.Log(0.5)}}, Terminal: true}
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		ss, _, err := readAll(b.String(), ReaderOptions{SharedOnly: true})
		if err != nil || len(ss) != 1 || ss[0].Session != id {
			t.Errorf("id %q: written as %s: %+v %v", id, b.String(), ss, err)
		}
	}
}
