package sessionlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"dprl/space"
)

func readAll(t *testing.T, data string, spec Spec) ([]Session, error) {
	t.Helper()
	r := NewReader(strings.NewReader(data), ReaderOptions{Name: "in.jsonl", Spec: spec})
	var out []Session
	for {
		s, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
}

func TestReadGood(t *testing.T) {
	b, err := os.ReadFile("testdata/good.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ss, err := readAll(t, string(b), Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 {
		t.Fatalf("%d sessions", len(ss))
	}
	s := ss[0]
	if s.Session != "s1" || s.User != "u1" || s.Expert != "e7" || *s.PolicyVersion != 3 || !s.Terminal || len(s.Steps) != 2 {
		t.Errorf("session 1: %+v", s)
	}
	if s.Steps[0].Action.Index != 1 || math.Abs(s.Steps[0].LogP-math.Log(0.9)) > 1e-15 || s.Return() != 1.5 {
		t.Errorf("step 0: %+v", s.Steps[0])
	}
	if ss[1].Steps[0].LogP != -0.1 || ss[1].Terminal {
		t.Errorf("session 2: %+v", ss[1])
	}
}

func TestReadBad(t *testing.T) {
	good := `{"session":"s","steps":[{"obs":[1,2],"action":0,"reward":1,"prob":0.5}],"terminal":true}`
	cases := []struct {
		name, data, want string
		spec             Spec
	}{
		{"not json", `{"session":`, "in.jsonl:1: sessionlog: bad session record", Spec{}},
		{"unknown field", `{"session":"s","steps":[],"terminal":true,"x":1}`, `unknown field "x"`, Spec{}},
		{"unknown step field", `{"session":"s","steps":[{"obs":[1],"action":0,"reward":1,"prob":1,"q":2}],"terminal":true}`, `unknown field "q"`, Spec{}},
		{"missing session", `{"steps":[{"obs":[1],"action":0,"reward":1,"prob":1}],"terminal":true}`, "session: missing", Spec{}},
		{"empty session", `{"session":"","steps":[{"obs":[1],"action":0,"reward":1,"prob":1}],"terminal":true}`, "session: empty", Spec{}},
		{"control char", `{"session":"a\u0001b","steps":[{"obs":[1],"action":0,"reward":1,"prob":1}],"terminal":true}`, "control", Spec{}},
		{"missing terminal", `{"session":"s","steps":[{"obs":[1],"action":0,"reward":1,"prob":1}]}`, "terminal: missing", Spec{}},
		{"no steps", `{"session":"s","steps":[],"terminal":true}`, "steps: empty", Spec{}},
		{"obs dim", good + "\n" + `{"session":"t","steps":[{"obs":[1,2,3],"action":0,"reward":1,"prob":0.5}],"terminal":true}`, "in.jsonl:2: sessionlog: bad session record: steps[0].obs: length 3, want 2", Spec{}},
		{"obs dim spec", good, "steps[0].obs: length 2, want 4", Spec{ObsDim: 4}},
		{"huge number", `{"session":"s","steps":[{"obs":[1e999],"action":0,"reward":1,"prob":1}],"terminal":true}`, "bad session record", Spec{}},
		{"missing reward", `{"session":"s","steps":[{"obs":[1],"action":0,"prob":1}],"terminal":true}`, "steps[0].reward: missing", Spec{}},
		{"missing prob", `{"session":"s","steps":[{"obs":[1],"action":0,"reward":1}],"terminal":true}`, "steps[0].prob: missing", Spec{}},
		{"prob and logp", `{"session":"s","steps":[{"obs":[1],"action":0,"reward":1,"prob":1,"logp":0}],"terminal":true}`, "give one", Spec{}},
		{"prob zero", `{"session":"s","steps":[{"obs":[1],"action":0,"reward":1,"prob":0}],"terminal":true}`, "prob: 0", Spec{}},
		{"prob above one", `{"session":"s","steps":[{"obs":[1],"action":0,"reward":1,"prob":1.5}],"terminal":true}`, "prob: 1.5", Spec{Discrete: 2}},
		{"action range", `{"session":"s","steps":[{"obs":[1],"action":2,"reward":1,"prob":1}],"terminal":true}`, "index 2 outside [0, 2)", Spec{Discrete: 2}},
		{"action negative", `{"session":"s","steps":[{"obs":[1],"action":-1,"reward":1,"prob":1}],"terminal":true}`, "index -1", Spec{}},
		{"action float", `{"session":"s","steps":[{"obs":[1],"action":1.5,"reward":1,"prob":1}],"terminal":true}`, "not an integer", Spec{}},
		{"action vector for discrete", `{"session":"s","steps":[{"obs":[1],"action":[1],"reward":1,"prob":1}],"terminal":true}`, "discrete", Spec{Discrete: 3}},
		{"mixed actions", `{"session":"s","steps":[{"obs":[1],"action":[1],"reward":1,"prob":1},{"obs":[1],"action":0,"reward":1,"prob":1}],"terminal":true}`, "continuous", Spec{}},
		{"final obs dim", `{"session":"s","steps":[{"obs":[1],"action":0,"reward":1,"prob":1}],"final_obs":[1,2],"terminal":true}`, "final_obs: length 2, want 1", Spec{}},
		{"trailing", good + ` {}`, "trailing data", Spec{}},
		// The wire decoder's strictness (package stream): a repeated key is
		// refused, in the record and in a step, naming the key; keys match
		// exactly (encoding/json would take "Session" for "session"); null
		// is a wrong type; strings are UTF-8.
		{"duplicate key", `{"session":"s","session":"t","steps":[{"obs":[1],"action":0,"reward":1,"prob":1}],"terminal":true}`, `in.jsonl:1: sessionlog: bad session record: duplicate key "session"`, Spec{}},
		{"duplicate step key", `{"session":"s","steps":[{"obs":[1],"action":0,"reward":1,"reward":2,"prob":1}],"terminal":true}`, `steps[0]: duplicate key "reward"`, Spec{}},
		{"duplicate key line 2", good + "\n" + `{"session":"t","steps":[{"obs":[1,2],"action":0,"reward":1,"prob":0.5}],"terminal":true,"terminal":false}`, `in.jsonl:2: sessionlog: bad session record: duplicate key "terminal"`, Spec{}},
		{"escaped duplicate key", `{"session":"s","\u0073ession":"t","steps":[{"obs":[1],"action":0,"reward":1,"prob":1}],"terminal":true}`, `duplicate key "session"`, Spec{}},
		{"case-folded key", `{"Session":"s","steps":[{"obs":[1],"action":0,"reward":1,"prob":1}],"terminal":true}`, `unknown field "Session"`, Spec{}},
		{"null user", `{"session":"s","user":null,"steps":[{"obs":[1],"action":0,"reward":1,"prob":1}],"terminal":true}`, "user: want string, got null", Spec{}},
		{"null obs", `{"session":"s","steps":[{"obs":null,"action":0,"reward":1,"prob":1}],"terminal":true}`, "steps[0].obs: want array, got null", Spec{}},
		{"string action", `{"session":"s","steps":[{"obs":[1],"action":"1","reward":1,"prob":1}],"terminal":true}`, "steps[0].action: want an integer action index", Spec{}},
		{"bad utf-8", "{\"session\":\"s\xff\",\"steps\":[{\"obs\":[1],\"action\":0,\"reward\":1,\"prob\":1}],\"terminal\":true}", "not valid UTF-8", Spec{}},
		{"policy version", `{"session":"s","policy_version":1.5,"steps":[{"obs":[1],"action":0,"reward":1,"prob":1}],"terminal":true}`, "policy_version: 1.5 is not an unsigned", Spec{}},
		{"huge reward", `{"session":"s","steps":[{"obs":[1],"action":0,"reward":-1e400,"prob":1}],"terminal":true}`, "steps[0].reward: number -1e400 overflows float64", Spec{}},
		{"not an object", `[1,2]`, "want object, got array", Spec{}},
		{"long id", `{"session":"` + strings.Repeat("x", 300) + `","steps":[{"obs":[1],"action":0,"reward":1,"prob":1}],"terminal":true}`, "limit 256", Spec{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readAll(t, c.data, c.spec)
			var le *LineError
			if err == nil || !errors.As(err, &le) || !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want a LineError marked ErrFormat", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %q, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestLineTooLong(t *testing.T) {
	r := NewReader(strings.NewReader(strings.Repeat("x", 5000)+"\n"), ReaderOptions{MaxLineBytes: 1024})
	if _, err := r.Next(); !errors.Is(err, ErrTooLong) {
		t.Errorf("err = %v", err)
	}
}

func randomSessions(rng *rand.Rand, n, steps, obsDim int) []Session {
	out := make([]Session, n)
	for i := range out {
		v := uint64(i)
		s := Session{Session: fmt.Sprintf("s%d", i), User: fmt.Sprintf("u%d", rng.IntN(100)), PolicyVersion: &v, Terminal: rng.IntN(2) == 0}
		for t := 0; t < 1+rng.IntN(steps); t++ {
			obs := make([]float64, obsDim)
			for j := range obs {
				obs[j] = rng.NormFloat64()
			}
			s.Steps = append(s.Steps, Step{Obs: obs, Action: space.Action{Index: rng.IntN(2)}, Reward: rng.Float64(), LogP: math.Log(0.5)})
		}
		s.FinalObs = []float64{1, 2, 3, 4}[:obsDim]
		out[i] = s
	}
	return out
}

func TestWriteReadRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	in := randomSessions(rng, 50, 20, 4)
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range in {
		if err := w.Write(&in[i]); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	out, err := readAll(t, buf.String(), Spec{ObsDim: 4, Discrete: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d of %d", len(out), len(in))
	}
	for i := range in {
		a, b := in[i], out[i]
		if a.Session != b.Session || a.User != b.User || *a.PolicyVersion != *b.PolicyVersion || a.Terminal != b.Terminal || len(a.Steps) != len(b.Steps) {
			t.Fatalf("session %d differs", i)
		}
		for k := range a.Steps {
			if a.Steps[k].Obs[0] != b.Steps[k].Obs[0] || a.Steps[k].Reward != b.Steps[k].Reward || a.Steps[k].LogP != b.Steps[k].LogP || a.Steps[k].Action.Index != b.Steps[k].Action.Index {
				t.Fatalf("session %d step %d differs: %+v vs %+v", i, k, a.Steps[k], b.Steps[k])
			}
		}
	}
	// Continuous actions round-trip too; NaN is refused by the writer.
	c := Session{Session: "c", Steps: []Step{{Obs: []float64{1}, Action: space.Action{Vec: []float64{0.5, -2}}, Reward: 1, LogP: -1}}, Terminal: true}
	buf.Reset()
	w = NewWriter(&buf)
	if err := w.Write(&c); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	out, err = readAll(t, buf.String(), Spec{})
	if err != nil || out[0].Steps[0].Action.Vec[1] != -2 {
		t.Errorf("continuous: %+v %v", out, err)
	}
	c.Steps[0].Reward = math.NaN()
	if err := NewWriter(io.Discard).Write(&c); err == nil {
		t.Error("NaN reward written")
	}
}

func TestDatasetID(t *testing.T) {
	const (
		s1 = `{"session":"s1","user":"u1","steps":[{"obs":[0.5,1],"action":1,"reward":0.5,"prob":0.5}],"terminal":true}`
		s2 = `{"session":"s2","steps":[{"obs":[0,-2],"action":0,"reward":1,"logp":-0.1}],"final_obs":[1,1],"terminal":false}`
	)
	// The same records, reformatted: whitespace, key order, number
	// spelling, prob as logp, -0 for 0, blank lines, CRLF, record order, no
	// final newline.
	same := []string{
		s1 + "\n" + s2 + "\n",
		s1 + "\n" + s2 + "\n\n\n",
		s1 + "\n" + s2,
		"\n" + s1 + "\r\n\r\n" + s2 + "\r\n",
		s2 + "\n" + s1 + "\n",
		`{ "terminal" : true, "steps" : [ { "prob" : 5e-1, "reward" : 0.50, "action" : 1, "obs" : [ 5E-1, 1.0 ] } ], "user" : "u1", "session" : "s1" }` + "\n" + s2 + "\n",
		strings.Replace(s1, `"prob":0.5`, fmt.Sprintf(`"logp":%v`, math.Log(0.5)), 1) + "\n" + strings.Replace(s2, `"obs":[0,`, `"obs":[-0,`, 1) + "\n",
		// What no mechanism reads as data is not the record's identity:
		// ids renamed or dropped, a policy version added, behaviour
		// probabilities changed or dropped, final_obs dropped.
		strings.Replace(s1, `"s1"`, `"s1b"`, 1) + "\n" + s2 + "\n",
		strings.Replace(s1, `"user":"u1",`, ``, 1) + "\n" + s2 + "\n",
		strings.Replace(s1, `"prob":0.5`, `"prob":0.25`, 1) + "\n" + s2 + "\n",
		s1 + "\n" + strings.Replace(s2, `,"final_obs":[1,1]`, ``, 1) + "\n",
		strings.Replace(s1, `"user":"u1",`, `"user":"u1","policy_version":0,`, 1) + "\n" + s2 + "\n",
		strings.Replace(s1, `,"prob":0.5`, ``, 1) + "\n" + s2 + "\n",
	}
	// Other records: any value read as data changed, a record dropped or
	// duplicated.
	other := []string{
		s1 + "\n",
		s1 + "\n" + s1 + "\n" + s2 + "\n",
		strings.Replace(s1, `"reward":0.5`, `"reward":0.5000000001`, 1) + "\n" + s2 + "\n",
		strings.Replace(s1, `"obs":[0.5,1]`, `"obs":[0.5,1.0000000001]`, 1) + "\n" + s2 + "\n",
		strings.Replace(s1, `"action":1`, `"action":0`, 1) + "\n" + s2 + "\n",
		s1 + "\n" + strings.Replace(s2, `"terminal":false`, `"terminal":true`, 1) + "\n",
	}
	dir := t.TempDir()
	idOf := func(i int, content string) string {
		t.Helper()
		p := fmt.Sprintf("%s/d%d.jsonl", dir, i)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		id, err := DatasetID(p)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		return id
	}
	want := idOf(0, same[0])
	if !strings.HasPrefix(want, "records-sha256:") || len(want) != len("records-sha256:")+64 {
		t.Errorf("id %q", want)
	}
	for i, c := range same {
		if got := idOf(i, c); got != want {
			t.Errorf("reformatted copy %d: id %s, want %s", i, got, want)
		}
	}
	seen := map[string]int{want: -1}
	for i, c := range other {
		got := idOf(100+i, c)
		if j, ok := seen[got]; ok {
			t.Errorf("other records %d: id %s, the same as case %d", i, got, j)
		}
		seen[got] = i
	}
	// Sessions written by Writer read back as the same records, also
	// steps without a behaviour probability.
	ss, err := readAll(t, same[0], Spec{})
	if err != nil {
		t.Fatal(err)
	}
	ss[0].Steps[0].LogP, ss[0].Steps[0].NoProb = math.NaN(), true
	want = idOf(1, strings.Replace(s1, `,"prob":0.5`, ``, 1)+"\n"+s2+"\n")
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range ss {
		if err := w.Write(&ss[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if id, _ := SessionsID(ss); id != want || idOf(200, buf.String()) != want {
		t.Errorf("written and read back: %s / %s, want %s", id, idOf(201, buf.String()), want)
	}
	if _, err := DatasetID(dir + "/missing.jsonl"); err == nil {
		t.Error("missing file: no error")
	}
	if _, err := DatasetID("testdata/good.jsonl"); err != nil {
		t.Error(err)
	}
	bad := dir + "/bad.jsonl"
	if err := os.WriteFile(bad, []byte(s1+"\n{\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := DatasetID(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Errorf("malformed log: %v, want an error naming line 2", err)
	}
}

func FuzzSessionLine(f *testing.F) {
	b, _ := os.ReadFile("testdata/good.jsonl")
	for _, l := range strings.Split(string(b), "\n") {
		f.Add([]byte(l))
	}
	f.Add([]byte(`{"session":"s","steps":[{"obs":[1],"action":[1e308],"reward":1,"prob":1}],"terminal":true}`))
	f.Add([]byte(`{"session":"s","steps":[{"obs":[],"action":0,"reward":1,"logp":-1e308}],"terminal":false}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), ReaderOptions{MaxLineBytes: 1 << 16})
		for i := 0; i < 8; i++ {
			s, err := r.Next()
			if err != nil {
				return
			}
			// Anything accepted is well-formed and survives a round trip.
			if s.Session == "" || len(s.Steps) == 0 {
				t.Fatalf("accepted %+v", s)
			}
			for _, st := range s.Steps {
				if math.IsNaN(st.LogP) || math.IsInf(st.LogP, 0) || len(st.Obs) == 0 {
					t.Fatalf("accepted step %+v", st)
				}
			}
			var buf bytes.Buffer
			w := NewWriter(&buf)
			if err := w.Write(&s); err != nil {
				t.Fatalf("accepted record does not write: %v", err)
			}
			w.Flush()
			if _, err := NewReader(&buf, ReaderOptions{}).Next(); err != nil {
				t.Fatalf("round trip: %v\n%s", err, buf.String())
			}
		}
	})
}

// BenchmarkRead measures the streaming reader on CartPole-like sessions
// (64 steps, 4-dim observations); memory per session stays bounded.
func BenchmarkRead(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var buf bytes.Buffer
	w := NewWriter(&buf)
	in := randomSessions(rng, 1000, 64, 4)
	for i := range in {
		w.Write(&in[i])
	}
	w.Flush()
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		r := NewReader(bytes.NewReader(data), ReaderOptions{Spec: Spec{ObsDim: 4, Discrete: 2}})
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "sessions/s")
}

// TestOptionalProb checks the log without behaviour probabilities (an SVT
// stable release): the default reader refuses it naming the line and field,
// a reader with OptionalProb returns NoProb steps, and the writer omits
// "logp" for them, so the log round-trips.
func TestOptionalProb(t *testing.T) {
	withProb := `{"session":"a","steps":[{"obs":[1,2],"action":0,"reward":1,"prob":0.5}],"terminal":true}`
	noProb := `{"session":"b","steps":[{"obs":[1,2],"action":1,"reward":2},{"obs":[3,4],"action":0,"reward":0}],"final_obs":[5,6],"terminal":false}`
	data := withProb + "\n" + noProb + "\n"

	_, err := readAll(t, data, Spec{})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "steps[0].prob: missing") ||
		!strings.Contains(err.Error(), "without behaviour probabilities") {
		t.Fatalf("default reader: err = %v, want line 2, steps[0].prob: missing", err)
	}

	rd := NewReader(strings.NewReader(data), ReaderOptions{Name: "in.jsonl", OptionalProb: true})
	var ss []Session
	for {
		s, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	if len(ss) != 2 || !ss[0].Steps[0].HasProb() || ss[0].Steps[0].LogP != math.Log(0.5) {
		t.Fatalf("sessions %+v", ss)
	}
	for k, st := range ss[1].Steps {
		if st.HasProb() || !st.NoProb || !math.IsNaN(st.LogP) {
			t.Errorf("step %d: %+v, want NoProb with LogP NaN", k, st)
		}
	}
	// A present probability is still checked under OptionalProb.
	if _, err := NewReader(strings.NewReader(`{"session":"c","steps":[{"obs":[1],"action":0,"reward":1,"prob":0}],"terminal":true}`),
		ReaderOptions{OptionalProb: true}).Next(); err == nil || !strings.Contains(err.Error(), "prob: 0") {
		t.Errorf("prob 0 under OptionalProb: err = %v", err)
	}

	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range ss {
		if err := w.Write(&ss[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"logp":`) || strings.Contains(lines[1], `"logp"`) || strings.Contains(lines[1], `"prob"`) {
		t.Fatalf("written:\n%s", buf.String())
	}
	if _, err := readAll(t, buf.String(), Spec{}); err == nil {
		t.Error("the default reader accepted the written log without probabilities")
	}
	back, err := NewReader(strings.NewReader(buf.String()), ReaderOptions{OptionalProb: true}).Next()
	if err != nil || back.Session != "a" {
		t.Fatalf("%+v %v", back, err)
	}
}
