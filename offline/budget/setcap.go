package budget

import (
	"errors"
	"fmt"

	"dprl/internal/fielderr"
	"dprl/ledger"
)

// CapArgs are a change of a dataset's stored cap as an operator gives it:
// the settings of dprl ledger set-cap, whose flags are named as the fields
// (data, dataset, file, unit, epsilon, delta, reason). Change checks them
// and SetCap applies them; their errors name the fields at fault
// (*fielderr.Error, CapFields), which the command renders as its flags.
type CapArgs struct {
	// Data is the ledger's directory (required).
	Data string `flag:"data" usage:"the ledger's directory (an offline --ledger directory or an agent's --data) (required)"`
	// Dataset is the dataset's id, or File a session log of its records
	// (DatasetOfFile): exactly one of them.
	Dataset string `flag:"dataset" usage:"the dataset's id"`
	File    string `flag:"file" usage:"a session log whose records belong to the dataset (instead of --dataset)"`
	// Unit is the protected unit ("": the dataset's only unit).
	Unit string `flag:"unit" usage:"the protected unit: trajectory, user or expert (default: the dataset's only unit)"`
	// Epsilon and Delta are the new cap, Reason why it changes (all
	// required).
	Epsilon float64 `flag:"epsilon" usage:"the new cap's epsilon (required)"`
	Delta   float64 `flag:"delta" usage:"the new cap's delta (required)"`
	Reason  string  `flag:"reason" usage:"why the cap changes, recorded in the entry (required)"`
}

// CapFields are the fields the errors of CapArgs may name.
var CapFields = fielderr.Fields{"Data", "Dataset", "File", "Unit", "Epsilon", "Delta", "Reason"}

// Change checks a (set reports whether a field was given) and returns its
// change, whose Dataset is "" when File names the dataset. Every error is
// the operator's.
func (a CapArgs) Change(set func(field string) bool) (ledger.CapChange, error) {
	c := ledger.CapChange{Dataset: a.Dataset, Unit: ledger.Unit(a.Unit), Cap: ledger.Cap{Epsilon: a.Epsilon, Delta: a.Delta}, Reason: a.Reason}
	if a.Data == "" || (a.Dataset == "") == (a.File == "") || !set("Epsilon") || !set("Delta") {
		return c, CapFields.Errorf("give {Data}, {Epsilon}, {Delta}, {Reason} and one of {Dataset} ID (dprl ledger show lists them) or {File} LOG")
	} else if err := c.Validate(); err != nil {
		return c, CapFields.Errorf("{Epsilon}, {Delta}, {Reason}: %w", err)
	}
	return c, nil
}

// SetCap applies change c of a to the ledger s (ledger.Store.ChangeCap),
// to the dataset of File's records if File is given. Errors: File's
// records that cannot be read (naming File); a dataset the ledger does not
// hold (saying so); a dataset with several units and no Unit (a
// *ledger.UnitError, naming Unit) and a change the ledger refuses (wrapping
// ledger.ErrInvalid), both the operator's mistakes.
func (a CapArgs) SetCap(s *ledger.Store, c ledger.CapChange) (res ledger.CapChangeResult, err error) {
	what := a.Dataset
	if a.File != "" {
		if c.Dataset, err = DatasetOfFile(s, a.File); err != nil {
			return res, CapFields.Errorf("{File} %s: %v", a.File, err)
		}
		what = "for the records of " + a.File
	}
	res, err = s.ChangeCap(c)
	var ue *ledger.UnitError
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return res, fmt.Errorf("no dataset %s in the ledger %s (no private run has read them; the ids are listed by dprl ledger show)", what, a.Data)
	case errors.As(err, &ue):
		return res, CapFields.Wrap(unitHint{ue})
	}
	return res, err
}

// unitHint is a *ledger.UnitError asking for the setting Unit.
type unitHint struct{ *ledger.UnitError }

func (e unitHint) Error() string {
	return fmt.Sprintf("dataset %s has budgets at units %s: give {Unit}", e.Dataset, e.UnitList())
}

func (e unitHint) Unwrap() error { return e.UnitError }
