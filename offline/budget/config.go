package budget

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"dprl/ledger"
)

// DefaultLedger is the ledger directory offline runs are charged to when
// none is given: $XDG_DATA_HOME/dprl/offline-ledger, else
// ~/.local/share/dprl/offline-ledger, else dprl-offline-ledger in the
// temporary directory.
func DefaultLedger() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "dprl", "offline-ledger")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "dprl", "offline-ledger")
	}
	return filepath.Join(os.TempDir(), "dprl-offline-ledger")
}

// CapError is an invalid component of a configured cap (Config.Cap).
type CapError struct {
	// Component is "epsilon" or "delta".
	Component string
	// Value is the component's value.
	Value float64
	// Want says what a valid value is: "> 0" or "in (0, 1)".
	Want string
}

// Error returns "cap <component> <value>: want <want>".
func (e *CapError) Error() string {
	return fmt.Sprintf("cap %s %v: want %s", e.Component, e.Value, e.Want)
}

// validCap returns a *CapError for the first invalid component of c
// (epsilon, then delta), or nil.
func validCap(c ledger.Cap) error {
	if !(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0) {
		return &CapError{Component: "epsilon", Value: c.Epsilon, Want: "> 0"}
	}
	if !(c.Delta > 0 && c.Delta < 1) {
		return &CapError{Component: "delta", Value: c.Delta, Want: "in (0, 1)"}
	}
	return nil
}

// Resolve returns c as Run takes it. An uncharged run keeps only Uncharged
// and Logger: it opens no ledger, so its cap is neither checked nor used. A
// charged run gets DefaultLedger() when Ledger is empty, and its cap is
// checked: an invalid component is a *CapError, so that a caller can name
// the setting at fault before any file is read.
func (c Config) Resolve() (Config, error) {
	if c.Uncharged {
		return Config{Uncharged: true, Logger: c.Logger}, nil
	}
	if err := validCap(c.Cap); err != nil {
		return Config{}, err
	}
	if c.Ledger == "" {
		c.Ledger = DefaultLedger()
	}
	return c, nil
}

// Explain adds to a refused run's error (a *Refusal inside err) how the cap
// is changed, in the words of the dprl command line: its --dataset-epsilon
// and --dataset-delta flags and "dprl ledger set-cap". It names the file
// the run read, never the dataset's id (a function of the data). Other
// errors are returned as they are.
func Explain(err error) error {
	var r *Refusal
	if !errors.As(err, &r) {
		return err
	}
	setCap := fmt.Sprintf("dprl ledger set-cap --data %s --file %s --unit %s --epsilon E --delta D --reason TEXT", r.Ledger, r.Path, r.Unit)
	switch {
	case errors.Is(err, ledger.ErrBudgetExceeded):
		if r.FirstRun {
			return fmt.Errorf("%w (this is the dataset's first run at unit %s: the cap is --dataset-epsilon %g at --dataset-delta %g, which the run would store with the dataset)", err, r.Unit, r.Cap.Epsilon, r.Cap.Delta)
		}
		return fmt.Errorf("%w (the cap is stored with the dataset; raise it only if the dataset's owner agreed: %s)", err, setCap)
	case errors.Is(err, ledger.ErrCapMismatch):
		return fmt.Errorf("%w; leave out --dataset-epsilon/--dataset-delta to use it, or change it with %s", err, setCap)
	}
	return err
}

// Flags are the budget settings of an offline command, one field per flag
// (Ledger's flag is the command's own: its help names DefaultLedger).
// Config builds the run's Config from them.
type Flags struct {
	Ledger         string
	DatasetEpsilon float64       `flag:"dataset-epsilon" default:"10" usage:"the dataset's privacy budget at this run's unit, stored with the dataset by its first private run at that unit; later runs use the stored cap, a different value is refused (change it with dprl ledger set-cap)"`
	WaitLock       time.Duration `flag:"wait-lock" usage:"wait up to this long for the ledger while another process holds it (another offline run or an agent) instead of failing at once"`
	DatasetDelta   float64       `flag:"dataset-delta" default:"1e-5" usage:"delta of the dataset's budget at this run's unit (runs compose with the RDP accountant, and with PLD too once a run was charged with it, the smaller total counting), stored like --dataset-epsilon"`
}

// Config returns the resolved Config (Config.Resolve) of a run charged as
// f says, given reporting whether a field of f was given; private false
// gives an uncharged run (no ledger is opened).
func (f Flags) Config(given func(field string) bool, private bool, log zerolog.Logger) (Config, error) {
	return Config{Ledger: f.Ledger, Cap: ledger.Cap{Epsilon: f.DatasetEpsilon, Delta: f.DatasetDelta}, EpsilonGiven: given("DatasetEpsilon"),
		DeltaGiven: given("DatasetDelta"), Uncharged: !private, WaitLock: f.WaitLock, Logger: log}.Resolve()
}
