package synth

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bootstrap-dev/bootstrap/contract"
	"github.com/bootstrap-dev/bootstrap/toolchain/release"
)

// Delta is one minimal revision of a contract, with the trace evidence that
// motivated it. Deltas are JSON so an LLM can propose them in the same form
// the rules do.
type Delta struct {
	// Rule names who proposed it: a rule name such as "missing-command", or "llm".
	Rule string `json:"rule"`
	// Reason says in plain words why, for the summary.
	Reason string `json:"reason"`
	// Evidence cites the trace: "attempt 2, step build/1: sh: 1: make: not found".
	Evidence string `json:"evidence"`
	Ops      []Op   `json:"ops"`
}

// Op is one edit. Which fields are used depends on Kind.
type Op struct {
	Kind OpKind `json:"op"`
	// Name is the package, toolchain, env var or user the op is about.
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
	// Stage and Index locate a step (Index is 0-based).
	Stage string `json:"stage,omitempty"`
	Index int    `json:"index,omitempty"`
	// Step is the new step for insert-step and replace-step.
	Step *contract.Step `json:"step,omitempty"`
	// Test is the quarantine entry for quarantine.
	Test *contract.Quarantined `json:"test,omitempty"`
	// Service is the service add-service declares.
	Service *contract.Service `json:"service,omitempty"`
}

// OpKind names an edit.
type OpKind string

// The edits a delta may make. Verification may only grow: no op deletes a
// stage, and the one that deletes a step (remove-step) is the drop-step
// rule's alone, for a step outside the strongest stage that runs no test
// (the sanity check holds it to that).
const (
	AddSystemPackage    OpKind = "add-system-package"    // Name
	RemoveSystemPackage OpKind = "remove-system-package" // Name: one the archive does not have
	SetToolchain        OpKind = "set-toolchain"         // Name, Value (exact version); adds it when absent
	SetEnv              OpKind = "set-env"               // Name, Value
	UnsetEnv            OpKind = "unset-env"             // Name
	SetCwd              OpKind = "set-cwd"               // Stage, Index, Value
	SetTimeout          OpKind = "set-timeout"           // Stage, Index, Value (Go duration)
	SetMemory           OpKind = "set-memory"            // Stage, Value (a size such as 8GiB)
	SetUser             OpKind = "set-user"              // Name
	InsertStep          OpKind = "insert-step"           // Stage (created as a fetch stage if absent and named fetch), Index, Step
	ReplaceStep         OpKind = "replace-step"          // Stage, Index, Step
	Quarantine          OpKind = "quarantine"            // Test
	SetArchive          OpKind = "set-archive"           // Name (suite), Value (Release sha256): what resolved the packages
	RemoveStep          OpKind = "remove-step"           // Stage, Index
	AddService          OpKind = "add-service"           // Service
)

// Apply returns a copy of c with d's ops applied in order; c is untouched.
func Apply(c *contract.Contract, d Delta) (*contract.Contract, error) {
	n := c.Clone()
	for i, op := range d.Ops {
		if err := apply(n, op); err != nil {
			return nil, fmt.Errorf("op %d (%s): %w", i+1, op.Kind, err)
		}
	}
	if err := contract.Validate(n); err != nil {
		return nil, fmt.Errorf("revised contract is invalid: %w", err)
	}
	return n, nil
}

func apply(c *contract.Contract, op Op) error {
	switch op.Kind {
	case AddSystemPackage:
		if op.Name == "" {
			return errors.New("no package named")
		}
		if !slices.Contains(c.SystemPackages, op.Name) {
			c.SystemPackages = append(c.SystemPackages, op.Name)
			slices.Sort(c.SystemPackages)
		}
	case AddService:
		if op.Service == nil {
			return errors.New("no service given")
		}
		c.Services = append(c.Services, *op.Service)
	case RemoveSystemPackage:
		i := slices.Index(c.SystemPackages, op.Name)
		if i < 0 {
			return fmt.Errorf("no system package %q to remove", op.Name)
		}
		c.SystemPackages = slices.Delete(c.SystemPackages, i, i+1)
		if len(c.SystemPackages) == 0 {
			c.SystemPackages = nil
		}
	case SetToolchain:
		if op.Name == "" || op.Value == "" {
			return errors.New("a toolchain needs a name and an exact version")
		}
		if t := c.Toolchain(op.Name); t != nil {
			if t.Version != op.Value {
				// The old source and hash pin the old version; the replay pins the new one.
				*t = contract.Toolchain{Name: op.Name, Version: op.Value, Source: release.Source(op.Name, op.Value)}
			}
		} else {
			c.Toolchains = append(c.Toolchains, contract.Toolchain{Name: op.Name, Version: op.Value, Source: release.Source(op.Name, op.Value)})
		}
	case SetEnv:
		if c.Env == nil {
			c.Env = map[string]string{}
		}
		c.Env[op.Name] = op.Value
	case UnsetEnv:
		if _, ok := c.Env[op.Name]; !ok {
			return fmt.Errorf("no env %s to unset", op.Name)
		}
		delete(c.Env, op.Name)
	case SetUser:
		c.User = op.Name
	case SetArchive:
		c.Archive = &contract.Archive{Suite: op.Name, Release: op.Value}
	case SetMemory:
		si := stageIndex(c, op.Stage)
		if si < 0 {
			return fmt.Errorf("no stage %q", op.Stage)
		}
		var b contract.Bytes
		if err := b.UnmarshalText([]byte(op.Value)); err != nil {
			return err
		}
		c.Stages[si].Memory = b
	case SetCwd, SetTimeout, ReplaceStep:
		st, err := step(c, op.Stage, op.Index)
		if err != nil {
			return err
		}
		switch op.Kind {
		case SetCwd:
			st.Cwd = op.Value
		case SetTimeout:
			var d contract.Duration
			if err := d.UnmarshalText([]byte(op.Value)); err != nil {
				return err
			}
			st.Timeout = d
		case ReplaceStep:
			if op.Step == nil {
				return errors.New("no step given")
			}
			*st = *op.Step
		}
	case RemoveStep:
		si := stageIndex(c, op.Stage)
		if _, err := step(c, op.Stage, op.Index); err != nil {
			return err
		}
		c.Stages[si].Steps = slices.Delete(c.Stages[si].Steps, op.Index, op.Index+1)
		if len(c.Stages[si].Steps) == 0 {
			c.Stages = slices.Delete(c.Stages, si, si+1)
		}
	case InsertStep:
		if op.Step == nil {
			return errors.New("no step given")
		}
		si := stageIndex(c, op.Stage)
		if si < 0 {
			if op.Stage != "fetch" {
				return fmt.Errorf("no stage %q", op.Stage)
			}
			// A fetch stage always comes first: only it has the network.
			c.Stages = append([]contract.Stage{{Name: "fetch", Network: true}}, c.Stages...)
			si = 0
		}
		s := &c.Stages[si]
		if op.Index < 0 || op.Index > len(s.Steps) {
			return fmt.Errorf("stage %q has no position %d", op.Stage, op.Index)
		}
		s.Steps = slices.Insert(s.Steps, op.Index, *op.Step)
	case Quarantine:
		if op.Test == nil {
			return errors.New("no test given")
		}
		for _, q := range c.Quarantine {
			if q.Test == op.Test.Test && q.Package == op.Test.Package {
				return nil
			}
		}
		c.Quarantine = append(c.Quarantine, *op.Test)
		slices.SortFunc(c.Quarantine, func(a, b contract.Quarantined) int {
			return strings.Compare(a.Package+"\x00"+a.Test, b.Package+"\x00"+b.Test)
		})
	default:
		return fmt.Errorf("unknown op %q", op.Kind)
	}
	return nil
}

func stageIndex(c *contract.Contract, name string) int {
	return slices.IndexFunc(c.Stages, func(s contract.Stage) bool { return s.Name == name })
}

func step(c *contract.Contract, stage string, index int) (*contract.Step, error) {
	si := stageIndex(c, stage)
	if si < 0 {
		return nil, fmt.Errorf("no stage %q", stage)
	}
	if index < 0 || index >= len(c.Stages[si].Steps) {
		return nil, fmt.Errorf("stage %q has no step %d", stage, index+1)
	}
	return &c.Stages[si].Steps[index], nil
}
