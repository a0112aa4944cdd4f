package ledger

import (
	"fmt"

	"dprl/ledger/accountant"

	"github.com/cockroachdb/pebble/v2"
)

// Cap is a dataset's privacy budget.
type Cap struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// DatasetState is what has been spent on a dataset: every event and fixed
// cost of its runs, composed together.
type DatasetState struct {
	Runs   int                `json:"runs"`
	Events []accountant.Event `json:"events"`
	Fixed  []FixedCost        `json:"fixed,omitempty"`
}

// Spent returns the dataset's composed epsilon at delta with the RDP
// accountant (fixed costs by basic composition).
func (d DatasetState) Spent(delta float64) (float64, error) {
	if d.Runs == 0 {
		return 0, nil
	}
	return totalEpsilon(accountant.MethodRDP, delta, d.Events, d.Fixed)
}

// Dataset returns what has been spent on a dataset.
func (s *Store) Dataset(id string) (DatasetState, error) {
	var d DatasetState
	if _, err := s.getJSON(datasetKey(id), &d); err != nil {
		return DatasetState{}, err
	}
	return d, nil
}

// ChargeOffline records an offline run on a dataset, refusing it with
// ErrBudgetExceeded (and writing nothing) when the dataset's composed epsilon
// at cap.Delta would exceed cap.Epsilon. Call it before reading the data.
// The entry's Epsilon and Delta are the run's own guarantee; the returned
// entry is as written.
func (s *Store) ChargeOffline(datasetID string, e Entry, c Cap) (Entry, error) {
	if datasetID == "" {
		return Entry{}, fmt.Errorf("%w: empty dataset id", ErrInvalid)
	}
	if !(c.Epsilon > 0) || !(c.Delta > 0 && c.Delta < 1) {
		return Entry{}, fmt.Errorf("%w: cap (%v, %v)", ErrInvalid, c.Epsilon, c.Delta)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, ErrClosed
	}
	e.Kind = KindOffline
	e.DatasetID = datasetID
	d, _, err := s.composeOffline(datasetID, &e, c)
	if err != nil {
		return Entry{}, err
	}
	h, err := s.Head()
	if err != nil {
		return Entry{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	e, err = s.appendEntry(b, h, e)
	if err != nil {
		return Entry{}, err
	}
	if err := setJSON(b, datasetKey(datasetID), d); err != nil {
		return Entry{}, err
	}
	if err := setJSON(b, keyHead, Head{Seq: e.Seq, Hash: e.Hash, Version: h.Version}); err != nil {
		return Entry{}, err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return Entry{}, fmt.Errorf("ledger: commit offline charge: %w", err)
	}
	return e, nil
}

// CheckOffline reports, without writing anything, whether ChargeOffline would
// accept the run: it returns the dataset's composed epsilon at cap.Delta
// after the run, or ErrBudgetExceeded. Callers check before validating the
// data (a malformed dataset then costs nothing) and charge after.
func (s *Store) CheckOffline(datasetID string, e Entry, c Cap) (float64, error) {
	if datasetID == "" {
		return 0, fmt.Errorf("%w: empty dataset id", ErrInvalid)
	}
	if !(c.Epsilon > 0) || !(c.Delta > 0 && c.Delta < 1) {
		return 0, fmt.Errorf("%w: cap (%v, %v)", ErrInvalid, c.Epsilon, c.Delta)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	e.Kind = KindOffline
	e.DatasetID = datasetID
	_, total, err := s.composeOffline(datasetID, &e, c)
	return total, err
}

// composeOffline validates e and returns the dataset's state and composed
// epsilon with e added, refusing with ErrBudgetExceeded above the cap.
func (s *Store) composeOffline(datasetID string, e *Entry, c Cap) (DatasetState, float64, error) {
	if err := e.validate(); err != nil {
		return DatasetState{}, 0, err
	}
	d, err := s.Dataset(datasetID)
	if err != nil {
		return DatasetState{}, 0, err
	}
	d.Runs++
	d.Events = append(d.Events, e.Events...)
	d.Fixed = append(d.Fixed, e.Fixed...)
	total, err := d.Spent(c.Delta)
	if err != nil {
		return DatasetState{}, 0, err
	}
	if total > c.Epsilon {
		return DatasetState{}, 0, fmt.Errorf("%w: dataset %s would reach epsilon %.4g > cap %g at delta %g after %d runs", ErrBudgetExceeded, datasetID, total, c.Epsilon, c.Delta, d.Runs)
	}
	return d, total, nil
}
