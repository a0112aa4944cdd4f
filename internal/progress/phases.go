package progress

// Phases reports a run of several phases, each as a task of its own: the
// first report of a phase finishes the previous phase's task and starts
// one with start(phase), counted in units[phase]. It is not safe for
// concurrent use.
type Phases struct {
	start func(phase string) *Task
	units map[string]string
	task  *Task
	cur   string
}

// NewPhases returns the Phases of tasks start makes.
func NewPhases(start func(phase string) *Task, units map[string]string) *Phases {
	return &Phases{start: start, units: units}
}

// Update reports done of total units of phase.
func (p *Phases) Update(phase string, done, total int) {
	if p.task == nil || phase != p.cur {
		p.Finish()
		p.task, p.cur = p.start(phase), phase
	}
	p.task.Update(Report{Done: int64(done), Total: int64(total), Unit: p.units[phase]})
}

// Finish finishes the current phase's task, if any.
func (p *Phases) Finish() {
	if p.task != nil {
		p.task.Finish()
	}
}
