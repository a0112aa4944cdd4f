package stream

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"dprl/sims"
)

func TestCodesUnique(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Codes() {
		if c == "" || seen[c] {
			t.Errorf("code %q empty or duplicate", c)
		}
		seen[c] = true
	}
	for _, e := range []*Error{ErrBadRequest, ErrUnknownField, ErrWrongType, ErrMissingField, ErrBadID, ErrObsDim,
		ErrNonFinite, ErrTooLarge, ErrUnknownSession, ErrSessionLimit, ErrStepLimit, ErrShuttingDown, ErrInternal} {
		if !seen[e.Code] {
			t.Errorf("sentinel %v has unregistered code", e)
		}
	}
}

func TestErrorIs(t *testing.T) {
	err := error(&Error{Code: CodeObsDim, Message: "from the wire"})
	if !errors.Is(err, ErrObsDim) || errors.Is(err, ErrNonFinite) {
		t.Fatal("Is does not compare codes")
	}
	if !errors.Is(errors.Join(errors.New("x"), err), ErrObsDim) {
		t.Fatal("wrapped error lost its code")
	}
}

func TestDecodeAct(t *testing.T) {
	lim := Limits{MaxMessageBytes: 200, MaxIDLen: 8}
	tests := []struct {
		name string
		in   string
		want Code // "" = valid
	}{
		{"valid", `{"session":"s1","user":"u1","obs":[1,-2.5e3,0],"reward":0.5}`, ""},
		{"valid first", ` {"obs":[0,0,1e-300],"user":"u","session":"s"} `, ""},
		{"escaped id", `{"session":"s\u00e9","user":"u","obs":[1,2,3]}`, ""},
		{"not json", `hello`, CodeBadRequest},
		{"empty", ``, CodeBadRequest},
		{"array", `[1,2]`, CodeBadRequest},
		{"trailing", `{"session":"s","user":"u","obs":[1,2,3]}x`, CodeBadRequest},
		{"two objects", `{"session":"s","user":"u","obs":[1,2,3]}{}`, CodeBadRequest},
		{"truncated", `{"session":"s","user":"u","obs":[1,2,3]`, CodeBadRequest},
		{"duplicate", `{"session":"s","session":"t","user":"u","obs":[1,2,3]}`, CodeBadRequest},
		{"unknown field", `{"session":"s","user":"u","obs":[1,2,3],"x":1}`, CodeUnknownField},
		{"case", `{"Session":"s","user":"u","obs":[1,2,3]}`, CodeUnknownField},
		{"obs string", `{"session":"s","user":"u","obs":"1,2,3"}`, CodeWrongType},
		{"obs elem string", `{"session":"s","user":"u","obs":[1,"2",3]}`, CodeWrongType},
		{"session number", `{"session":1,"user":"u","obs":[1,2,3]}`, CodeWrongType},
		{"reward null", `{"session":"s","user":"u","obs":[1,2,3],"reward":null}`, CodeWrongType},
		{"reward string", `{"session":"s","user":"u","obs":[1,2,3],"reward":"1"}`, CodeWrongType},
		{"missing session", `{"user":"u","obs":[1,2,3]}`, CodeMissingField},
		{"empty user", `{"session":"s","user":"","obs":[1,2,3]}`, CodeBadID},
		{"missing obs", `{"session":"s","user":"u"}`, CodeMissingField},
		{"short obs", `{"session":"s","user":"u","obs":[1,2]}`, CodeObsDim},
		{"long obs", `{"session":"s","user":"u","obs":[1,2,3,4]}`, CodeObsDim},
		{"empty obs", `{"session":"s","user":"u","obs":[]}`, CodeObsDim},
		{"overflow obs", `{"session":"s","user":"u","obs":[1,1e400,3]}`, CodeNonFinite},
		{"overflow reward", `{"session":"s","user":"u","obs":[1,2,3],"reward":-1e309}`, CodeNonFinite},
		{"NaN", `{"session":"s","user":"u","obs":[1,NaN,3]}`, CodeBadRequest},
		{"leading zero", `{"session":"s","user":"u","obs":[01,2,3]}`, CodeBadRequest},
		{"hex", `{"session":"s","user":"u","obs":[0x1,2,3]}`, CodeBadRequest},
		{"too large", `{"session":"s","user":"u","obs":[1,2,3],"reward":` + strings.Repeat("1", 200) + `}`, CodeTooLarge},
		{"empty session", `{"session":"","user":"u","obs":[1,2,3]}`, CodeBadID},
		{"long user", `{"session":"s","user":"123456789","obs":[1,2,3]}`, CodeBadID},
		{"control char", `{"session":"s\u0007","user":"u","obs":[1,2,3]}`, CodeBadID},
		{"raw control", "{\"session\":\"s\x01\",\"user\":\"u\",\"obs\":[1,2,3]}", CodeBadRequest},
		{"bad utf8", "{\"session\":\"s\xff\",\"user\":\"u\",\"obs\":[1,2,3]}", CodeBadID},
		{"lone surrogate", `{"session":"\ud800","user":"u","obs":[1,2,3]}`, CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeAct([]byte(tt.in), lim, 3)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if r.Session == "" || r.User == "" || len(r.Obs) != 3 {
					t.Fatalf("bad value %+v", r)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != tt.want {
				t.Fatalf("got %v, want code %s", err, tt.want)
			}
		})
	}
}

func TestDecodeActValues(t *testing.T) {
	r, err := DecodeAct([]byte(`{"session":"a\"b","user":"\ud83d\ude00","obs":[1.5,-0],"reward":2}`), Limits{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Session != `a"b` || r.User != "😀" || r.Obs[0] != 1.5 || r.Reward == nil || *r.Reward != 2 {
		t.Fatalf("%+v", r)
	}
	r, err = DecodeAct([]byte(`{"session":"s","user":"u","obs":[1]}`), Limits{}, 1)
	if err != nil || r.Reward != nil {
		t.Fatalf("first step: %+v %v", r, err)
	}
}

func TestDecodeEnd(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Code
	}{
		{"valid", `{"session":"s","reward":1,"terminal":true}`, ""},
		{"valid false", `{"terminal":false,"reward":-0.5e2,"session":"s"}`, ""},
		{"valid user", `{"session":"s","user":"u","reward":1,"terminal":true}`, ""},
		{"empty user", `{"session":"s","user":"","reward":1,"terminal":true}`, CodeBadID},
		{"duplicate user", `{"session":"s","user":"u","user":"v","reward":1,"terminal":true}`, CodeBadRequest},
		{"user number", `{"session":"s","user":1,"reward":1,"terminal":true}`, CodeWrongType},
		{"missing terminal", `{"session":"s","reward":1}`, CodeMissingField},
		{"missing reward", `{"session":"s","terminal":true}`, CodeMissingField},
		{"terminal string", `{"session":"s","reward":1,"terminal":"true"}`, CodeWrongType},
		{"terminal typo", `{"session":"s","reward":1,"terminal":tru}`, CodeBadRequest},
		{"unknown", `{"session":"s","reward":1,"terminal":true,"ok":1}`, CodeUnknownField},
		{"overflow", `{"session":"s","reward":1e999,"terminal":true}`, CodeNonFinite},
		{"empty id", `{"session":"","reward":1,"terminal":true}`, CodeBadID},
		{"trailing", `{"session":"s","reward":1,"terminal":true},`, CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeEnd([]byte(tt.in), Limits{})
			if tt.want == "" {
				if err != nil || r.Session != "s" {
					t.Fatalf("%+v %v", r, err)
				}
				return
			}
			if !errors.Is(err, &Error{Code: tt.want}) {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
		})
	}
}

func TestPolicyRoundTrip(t *testing.T) {
	p := PolicyAnnouncement{Version: 1<<63 + 5, Epsilon: 1.25, Delta: 1e-6}
	b, err := EncodePolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := DecodePolicy(b, Limits{})
	if err != nil || q != p {
		t.Fatalf("%s -> %+v %v", b, q, err)
	}
	for _, bad := range []string{`{"version":1.5,"epsilon":1,"delta":0}`, `{"version":1,"epsilon":-1,"delta":0}`, `{"version":1,"epsilon":1}`} {
		if _, err := DecodePolicy([]byte(bad), Limits{}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestActReplyRoundTrip(t *testing.T) {
	for _, r := range []ActReply{
		{Action: sims.Action{Index: 3}, Version: 17, Step: 2},
		{Action: sims.Action{Vec: []float64{0.5, -1e-9, 3}}, Version: 1, Step: 0},
		{Action: sims.Action{Vec: []float64{}}},
	} {
		b, err := EncodeActReply(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeActReply(b)
		if err != nil || got.Version != r.Version || got.Step != r.Step || got.Action.Index != r.Action.Index ||
			len(got.Action.Vec) != len(r.Action.Vec) || (r.Action.Vec == nil) != (got.Action.Vec == nil) {
			t.Fatalf("%s -> %+v %v", b, got, err)
		}
	}
	if _, err := EncodeActReply(ActReply{Action: sims.Action{Vec: []float64{math.NaN()}}}); !errors.Is(err, ErrNonFinite) {
		t.Fatalf("NaN action encoded: %v", err)
	}
	if _, err := DecodeActReply([]byte(`{"error":{"code":"step_limit","message":"m"}}`)); !errors.Is(err, ErrStepLimit) {
		t.Fatalf("error body: %v", err)
	}
}

func TestActRequestRoundTrip(t *testing.T) {
	rw := 0.25
	in := ActRequest{Session: "s<1>", User: "ü\n"[:2], Obs: []float64{1, -2, 3e300}, Reward: &rw}
	b, err := AppendActRequest(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeAct(b, Limits{}, 3)
	if err != nil || out.Session != in.Session || out.User != in.User || *out.Reward != rw || out.Obs[2] != 3e300 {
		t.Fatalf("%s -> %+v %v", b, out, err)
	}
}

func TestAppendString(t *testing.T) {
	for _, in := range []string{"", `a"b\c`, "tab\tnl\n\x00\x1f", "é😀", "<&>"} {
		b := appendString(nil, in)
		var out string
		if err := json.Unmarshal(b, &out); err != nil || out != in {
			t.Errorf("%q -> %s -> %q %v", in, b, out, err)
		}
	}
	if b := appendString(nil, "a\xffb"); string(b) != `"a\ufffdb"` {
		t.Errorf("invalid UTF-8: %s", b)
	}
}

func TestDecodeActReplyShapes(t *testing.T) {
	for in, want := range map[string]ActReply{
		`{"action":-1,"version":2,"step":3}`:           {Action: sims.Action{Index: -1}, Version: 2, Step: 3},
		`{"step":3,"version":2,"action":5,"extra":{}}`: {Action: sims.Action{Index: 5}, Version: 2, Step: 3},
		` {"action":[1.5],"version":0,"step":0} `:      {Action: sims.Action{Vec: []float64{1.5}}},
	} {
		got, err := DecodeActReply([]byte(in))
		if err != nil || got.Action.Index != want.Action.Index || got.Version != want.Version || got.Step != want.Step || len(got.Action.Vec) != len(want.Action.Vec) {
			t.Errorf("%s -> %+v %v", in, got, err)
		}
	}
	if _, err := DecodeActReply([]byte(`{"version":1}`)); !errors.Is(err, ErrMissingField) {
		t.Errorf("missing action: %v", err)
	}
}

func TestDecodeActAnonymous(t *testing.T) {
	r, err := DecodeAct([]byte(`{"session":"s","obs":[1,2,3]}`), DefaultLimits(), 3)
	if err != nil || r.User != "" {
		t.Fatalf("anonymous session: %+v %v", r, err)
	}
	b, _ := AppendActRequest(nil, ActRequest{Session: "s", Obs: []float64{1}})
	if string(b) != `{"session":"s","obs":[1]}` {
		t.Errorf("anonymous encoding %s", b)
	}
}
