package kubewasm

// A parent's status.conditions, kept as Kubernetes keeps them: the same rules as
// apimachinery's meta.SetStatusCondition and its siblings. Every SDK's helper is held to
// one table of cases (guest-sdk/tests/conditions_cases.json).

import (
	"encoding/json"
	"regexp"
	"time"
)

// ConditionStatus is a condition's status: [ConditionTrue], [ConditionFalse] or
// [ConditionUnknown].
type ConditionStatus string

const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// ConditionStatusOf is [ConditionTrue] or [ConditionFalse].
func ConditionStatusOf(b bool) ConditionStatus {
	if b {
		return ConditionTrue
	}
	return ConditionFalse
}

// Condition is one entry of status.conditions, as apimachinery's metav1.Condition.
// ObservedGeneration is the parent's metadata.generation the condition was decided from
// (0: none). A zero LastTransitionTime means "now" to [SetStatusCondition].
type Condition struct {
	Type               string          `json:"type"`
	Status             ConditionStatus `json:"status"`
	ObservedGeneration int64           `json:"observedGeneration,omitempty"`
	LastTransitionTime time.Time       `json:"lastTransitionTime"`
	Reason             string          `json:"reason"`
	Message            string          `json:"message"`
}

// MarshalJSON writes LastTransitionTime as the API server writes a metav1.Time: UTC, to
// the second.
func (c Condition) MarshalJSON() ([]byte, error) {
	type plain Condition
	return json.Marshal(struct {
		plain
		LastTransitionTime string `json:"lastTransitionTime"`
	}{plain(c), c.LastTransitionTime.UTC().Format(time.RFC3339)})
}

// metav1.Condition's schema, as the API server enforces it.
var (
	conditionType   = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`)
	conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)
)

const (
	maxConditionType    = 316
	maxConditionReason  = 1024
	maxConditionMessage = 32768
)

// ConditionsFromStatus is the conditions of an observed status (parent.Status()), to
// start from: none when the status or its conditions is absent. The plugin's answer is
// the whole status, so a list not started from the observed one resets every
// lastTransitionTime. A list that is not one of conditions is a [Permanent] error naming
// the item.
func ConditionsFromStatus(status map[string]any) ([]Condition, error) {
	listed, found := status["conditions"]
	if !found || listed == nil {
		return nil, nil
	}
	items, ok := listed.([]any)
	if !ok {
		return nil, Permanent("status.conditions is not a list: %v", listed)
	}
	conditions := make([]Condition, 0, len(items))
	for i, item := range items {
		fields, ok := item.(map[string]any)
		if !ok {
			return nil, Permanent("status.conditions[%d] is not a condition: %v", i, item)
		}
		if _, ok := fields["lastTransitionTime"]; !ok {
			return nil, Permanent("status.conditions[%d] is not a condition: missing field `lastTransitionTime`", i)
		}
		var c Condition
		text, err := json.Marshal(fields)
		if err == nil {
			err = json.Unmarshal(text, &c)
		}
		if err != nil {
			return nil, Permanent("status.conditions[%d] is not a condition: %v", i, err)
		}
		conditions = append(conditions, c)
	}
	return conditions, nil
}

// SetStatusCondition sets the condition of c.Type in *conditions and says whether the
// list changed, as apimachinery's meta.SetStatusCondition: an absent type is appended
// with LastTransitionTime c's own or now (the request's Now); a present one takes the new
// status (and that time) only when the status differs, and the new reason, message and
// observedGeneration always. A type or reason the API server would refuse is a
// [Permanent] error naming it; the list is then unchanged.
func SetStatusCondition(conditions *[]Condition, c Condition, now time.Time) (changed bool, err error) {
	if err := checkCondition(c); err != nil {
		return false, err
	}
	at := c.LastTransitionTime
	if at.IsZero() {
		at = now
	}
	if at.IsZero() {
		return false, Permanent("SetStatusCondition: now is the zero time; pass the request's Now")
	}
	existing := FindStatusCondition(*conditions, c.Type)
	if existing == nil {
		c.LastTransitionTime = at
		*conditions = append(*conditions, c)
		return true, nil
	}
	if existing.Status != c.Status {
		existing.Status = c.Status
		existing.LastTransitionTime = at
		changed = true
	}
	if existing.Reason != c.Reason {
		existing.Reason = c.Reason
		changed = true
	}
	if existing.Message != c.Message {
		existing.Message = c.Message
		changed = true
	}
	if existing.ObservedGeneration != c.ObservedGeneration {
		existing.ObservedGeneration = c.ObservedGeneration
		changed = true
	}
	return changed, nil
}

// FindStatusCondition is the first condition of type t (changing it changes the list), or nil.
func FindStatusCondition(conditions []Condition, t string) *Condition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// RemoveStatusCondition removes every condition of type t, keeping the order of the
// rest, and says whether one was there.
func RemoveStatusCondition(conditions *[]Condition, t string) (removed bool) {
	kept := make([]Condition, 0, len(*conditions)) // a new array, as apimachinery: a copy of the old slice is left as it was
	for _, c := range *conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	removed = len(kept) != len(*conditions)
	*conditions = kept
	return removed
}

// IsStatusConditionTrue says whether the condition of type t is present and True.
func IsStatusConditionTrue(conditions []Condition, t string) bool {
	c := FindStatusCondition(conditions, t)
	return c != nil && c.Status == ConditionTrue
}

// IsStatusConditionFalse says whether the condition of type t is present and False (an
// absent one is neither).
func IsStatusConditionFalse(conditions []Condition, t string) bool {
	c := FindStatusCondition(conditions, t)
	return c != nil && c.Status == ConditionFalse
}

// checkCondition is what the API server would refuse of c, said before it is written.
func checkCondition(c Condition) error {
	if len(c.Type) > maxConditionType || !conditionType.MatchString(c.Type) {
		return Permanent("condition type %q is not valid: a name of letters, digits, '-', '_' and '.' "+
			"beginning and ending with a letter or digit, optionally prefixed by a lowercase DNS "+
			"subdomain and '/', at most %d characters", c.Type, maxConditionType)
	}
	switch c.Status {
	case ConditionTrue, ConditionFalse, ConditionUnknown:
	default:
		return Permanent("condition %s: status %q must be True, False or Unknown", c.Type, string(c.Status))
	}
	if len(c.Reason) > maxConditionReason || !conditionReason.MatchString(c.Reason) {
		return Permanent("condition %s: reason %q is not valid: it must begin with a letter, hold only "+
			"letters, digits, '_', ',' and ':', end with a letter, digit or '_', and be at most %d characters",
			c.Type, c.Reason, maxConditionReason)
	}
	if len(c.Message) > maxConditionMessage {
		return Permanent("condition %s: message is longer than %d characters", c.Type, maxConditionMessage)
	}
	return nil
}
