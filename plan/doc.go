// Package plan turns discovered evidence into a draft contract; the rule planner is deterministic, works offline and spends no tokens.
package plan
