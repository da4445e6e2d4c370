package kubewasmtest

import (
	"fmt"
	"strings"

	"kubewasm.dev/sdk"
	"kubewasm.dev/sdk/internal/cabi"
	"kubewasm.dev/sdk/internal/fields"
	"kubewasm.dev/sdk/internal/logsink"
	"kubewasm.dev/sdk/internal/wire"
)

// Event is one change of a watched object, as the host delivers it to a handler.
type Event struct {
	// Change is kubewasm.Added, Updated or Deleted.
	Change kubewasm.Change
	// Object is the object (a map, or anything that encodes to a JSON object).
	Object any
	// OldObject is, for an update, the object before the change; nil for none.
	OldObject any
	// Kind is the manifest's watch that selects Object unless set: the host delivers
	// changes of watched kinds only, so an object no watch selects fails.
	Kind              kubewasm.KindRef
	Initial           bool
	FinalStateUnknown bool
	// DeliveryID is the host's (`<uid>:<resourceVersion>:<change>`) unless set.
	DeliveryID string
	// Attempt is 1 unless set.
	Attempt uint32
	// Now is the host's time, RFC 3339; default [Now].
	Now string
	// Config is the plugin's settings (nil: none).
	Config any
	// HTTP answers the plugin's HTTP requests (see [Reply]).
	HTTP []Reply
}

// Handled is what a handler did with one change.
type Handled struct {
	// Requests are the HTTP requests the plugin sent, in order, as the host would
	// receive them.
	Requests []SentRequest
	// Logs are the lines the plugin logged during the call.
	Logs []Line
}

var changes = map[kubewasm.Change]wire.Change{kubewasm.Added: wire.ChangeAdded, kubewasm.Updated: wire.ChangeUpdated, kubewasm.Deleted: wire.ChangeDeleted}

// Handle delivers one change of a watched object to plugin's handler natively, through
// the export code, as the host does. The error is the plugin's own *kubewasm.Error as
// the host would receive it (Handled then holds what the call sent and logged before
// it failed), or a *HostWouldRefuse when the host would not load the plugin or deliver
// this change.
func Handle(plugin kubewasm.Handler, in Event) (*Handled, error) {
	manifest, err := Describe(plugin)
	if err != nil {
		return nil, err
	}
	change, ok := changes[in.Change]
	if !ok {
		return nil, fmt.Errorf("change is kubewasm.Added, Updated or Deleted, not %q", in.Change)
	}
	// The fields sent as they are; the objects, the kind and the settings are encoded below.
	ev := wire.ObjectEvent{Change: change, DeliveryId: in.DeliveryID, Attempt: in.Attempt, Now: in.Now}
	fields.Copy(&ev, in)
	if ev.Now == "" {
		ev.Now = Now
	}
	if ev.Attempt == 0 {
		ev.Attempt = 1
	}
	if ev.Object, err = kubewasm.ToJSON(in.Object); err != nil {
		return nil, fmt.Errorf("object: %w", err)
	}
	object, _ := kubewasm.ParseJSON(ev.Object)
	if in.OldObject != nil {
		old, err := kubewasm.ToJSON(in.OldObject)
		if err != nil {
			return nil, fmt.Errorf("old object: %w", err)
		}
		ev.OldObject = &old
	}
	if ev.Config, err = kubewasm.ToJSON(in.Config); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	kind := in.Kind
	if kind == (kubewasm.KindRef{}) {
		var watched []string
		for _, w := range manifest.Watches {
			watched = append(watched, w.Kind.String())
			if kind == (kubewasm.KindRef{}) && w.Kind.Matches(object) {
				kind = w.Kind
			}
		}
		if kind == (kubewasm.KindRef{}) {
			obj, _ := object.(map[string]any)
			shown := strings.Join(watched, ", ")
			if shown == "" {
				shown = "nothing"
			}
			return nil, &HostWouldRefuse{fmt.Sprintf("the host delivers changes of watched kinds only: the manifest watches %s, not %v %v", shown, obj["apiVersion"], obj["kind"])}
		}
	}
	ev.Kind = wire.KindRef(kind)
	if ev.DeliveryId == "" {
		obj, _ := object.(map[string]any)
		ev.DeliveryId = kubewasm.DeliveryIDOf(obj, in.Change)
	}

	var result cabi.Result[struct{}, wire.ReconcileError]
	logsink.Take()
	requests, err := withReplies(in.HTTP, func() { result = wire.CallHandlerHandle(&cabi.Arena{}, ev) })
	logs := logsink.Take()
	if err != nil {
		return nil, err
	}
	handled := &Handled{Requests: requests, Logs: logs}
	if result.Err != nil {
		return handled, &kubewasm.Error{Message: result.Err.Message, Retryable: result.Err.Retryable}
	}
	return handled, nil
}
