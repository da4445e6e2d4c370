package kubewasm

import (
	"encoding/json"
	"time"
)

// Handler is a plugin that handles the changes of the kinds its manifest watches, one
// object event at a time.
type Handler interface {
	Plugin
	// Handle handles one change of one watched object. Changes of one object arrive in
	// order: the next is delivered once Handle has returned for this one. Return an error
	// made by [Retryable] to have this one delivered again with backoff (the object's
	// later changes wait behind it), or by [Permanent] to drop it; any other error is
	// retried.
	Handle(ev *ObjectEvent) error
}

// Change is what happened to a watched object.
type Change string

// The changes.
const (
	// Added: the object appeared (created, or first seen).
	Added Change = "added"
	// Updated: the object changed (a new resourceVersion).
	Updated Change = "updated"
	// Deleted: the object is gone.
	Deleted Change = "deleted"
)

// ObjectEvent is one change of one watched object.
type ObjectEvent struct {
	Change Change
	// Kind is the object's kind, as the manifest's watch names it.
	Kind KindRef
	// Object is the object now (added, updated) or as last known (deleted).
	Object Object
	// OldObject is, for an update, the object before the change (after a host restart
	// only its metadata); nil otherwise.
	OldObject Object
	// Initial says the object existed before the plugin was first loaded (delivered only
	// when its settings ask for initial objects).
	Initial bool
	// FinalStateUnknown says, for a deletion, that a relist or a restart noticed it, not
	// the watch: Object may be stale.
	FinalStateUnknown bool
	// DeliveryID is `<uid>:<resourceVersion>:<change>`: the same on every retry and after
	// restarts, so that a receiver can drop duplicates.
	DeliveryID string
	// Attempt is 1 on the first delivery, counting up on retries.
	Attempt uint32
	// Now is the host's current time (the sandbox has no clock); NowRFC3339 is the text
	// it was sent as.
	Now        time.Time
	NowRFC3339 string
	// Config is the plugin's settings, JSON decoded (nil if none), Secret references
	// resolved; DecodeConfig decodes them into a struct.
	Config any
}

// DecodeConfig decodes the plugin's settings into v (a pointer); no settings leave v as
// it is.
func (e *ObjectEvent) DecodeConfig(v any) error { return decodeConfig(e.Config, v) }

// DeliveryIDOf is the delivery id the host gives change of obj: its uid, resourceVersion
// and the change.
func DeliveryIDOf(obj Object, change Change) string {
	meta, _ := obj["metadata"].(map[string]any)
	uid, _ := meta["uid"].(string)
	rv, _ := meta["resourceVersion"].(string)
	return uid + ":" + rv + ":" + string(change)
}

func decodeConfig(config, v any) error {
	if config == nil {
		return nil
	}
	text, err := json.Marshal(config)
	if err == nil {
		err = json.Unmarshal(text, v)
	}
	if err != nil {
		return Permanent("config: %v", err)
	}
	return nil
}

// timeOf is the time rfc3339 says; one that does not parse (only a hand-made test sends
// one) reads as the epoch.
func timeOf(rfc3339 string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, rfc3339)
	if err != nil {
		return time.Unix(0, 0).UTC()
	}
	return t
}
