package kubewasm

import (
	"fmt"

	"kubewasm.dev/sdk/internal/cabi"
	"kubewasm.dev/sdk/internal/wire"
)

// The glue between the contract's admission records and the SDK's types: decode the
// request, call the plugin's Default, Validate or Convert (or answer as one that admits
// everything and converts nothing), encode the answer.

func denialToWire(d *Denial) wire.Denial {
	out := wire.Denial{Message: d.Message}
	for _, c := range d.Causes {
		reason := c.Reason
		if reason == "" {
			reason = "FieldValueInvalid"
		}
		out.Causes = append(out.Causes, wire.FieldCause{Field: c.Field, Message: c.Message, Reason: reason})
	}
	return out
}

func admissionObject(what string, text *string) (Object, error) {
	if text == nil {
		return nil, nil
	}
	o, err := parseObject(what, *text)
	if err != nil {
		return nil, Deny("%s", AsError(err).Message)
	}
	return o, nil
}

func admissionJSON(what, text string) (any, error) {
	v, err := ParseJSON(text)
	if err != nil {
		return nil, Deny("%s is not JSON: %v", what, err)
	}
	return v, nil
}

// admissionRequestFromWire is the request as a plugin sees it; one it cannot read is a
// denial: a write the plugin cannot examine is refused, never let through.
func admissionRequestFromWire(r wire.AdmissionRequest) (*AdmissionRequest, error) {
	req := &AdmissionRequest{
		UID:        r.Uid,
		Kind:       KindRef(r.Kind),
		Operation:  operations[r.Operation],
		Name:       r.Name,
		DryRun:     r.DryRun,
		NowRFC3339: r.Now,
		Now:        timeOf(r.Now),
		UserInfo:   UserInfo{Username: r.UserInfo.Username, UID: r.UserInfo.Uid, Groups: r.UserInfo.Groups, Extra: map[string][]string{}},
	}
	if r.SubResource != nil {
		req.SubResource = *r.SubResource
	}
	if r.Namespace != nil {
		req.Namespace = *r.Namespace
	}
	for _, e := range r.UserInfo.Extra {
		req.UserInfo.Extra[e.F0] = e.F1
	}
	var err error
	if req.Object, err = admissionObject("object", r.Object); err != nil {
		return nil, err
	}
	if req.OldObject, err = admissionObject("old object", r.OldObject); err != nil {
		return nil, err
	}
	if req.Options, err = admissionJSON("options", r.Options); err != nil {
		return nil, err
	}
	if req.Config, err = admissionJSON("config", r.Config); err != nil {
		return nil, err
	}
	return req, nil
}

func admissionDefault(r wire.AdmissionRequest) cabi.Result[wire.Defaulted, wire.Denial] {
	type result = cabi.Result[wire.Defaulted, wire.Denial]
	refuse := func(err error) result {
		d := denialToWire(AsDenial(err))
		return result{Err: &d}
	}
	req, err := admissionRequestFromWire(r)
	if err != nil {
		return refuse(err)
	}
	defaulter, ok := plugin().(Defaulter)
	if !ok {
		return result{Ok: wire.Defaulted{Mutation: wire.Mutation{Tag: wire.MutationUnchanged}}}
	}
	var before string
	if req.Object != nil {
		if before, err = ToJSON(req.Object); err != nil {
			return refuse(err)
		}
	}
	answer, err := defaulter.Default(req)
	if err != nil {
		return refuse(err)
	}
	out := wire.Defaulted{Mutation: wire.Mutation{Tag: wire.MutationUnchanged}, Warnings: answer.Warnings}
	switch {
	case answer.Object != nil && answer.Patch != nil:
		return refuse(Deny("Default returned both an object and a patch: give one"))
	case answer.Object != nil:
		text, err := ToJSON(answer.Object)
		if err != nil {
			return refuse(Deny("the defaulted object does not encode to JSON: %v", err))
		}
		out.Mutation = wire.Mutation{Tag: wire.MutationObject, Object: text}
	case answer.Patch != nil:
		text, err := ToJSON(answer.Patch)
		if err != nil {
			return refuse(Deny("the patch does not encode to JSON: %v", err))
		}
		out.Mutation = wire.Mutation{Tag: wire.MutationPatch, Patch: text}
	case req.Object != nil:
		// Changed in place, as Kubebuilder's defaulters do.
		after, err := ToJSON(req.Object)
		if err != nil {
			return refuse(Deny("the defaulted object does not encode to JSON: %v", err))
		}
		if after != before {
			out.Mutation = wire.Mutation{Tag: wire.MutationObject, Object: after}
		}
	}
	return result{Ok: out}
}

func admissionValidate(r wire.AdmissionRequest) wire.Verdict {
	req, err := admissionRequestFromWire(r)
	var warnings []string
	if err == nil {
		if validator, ok := plugin().(Validator); ok {
			warnings, err = validator.Validate(req)
		}
	}
	out := wire.Verdict{Warnings: warnings}
	if err != nil {
		d := denialToWire(AsDenial(err))
		out.Denied = &d
	}
	return out
}

func admissionConvert(r wire.ConversionRequest) cabi.Result[[]string, string] {
	type result = cabi.Result[[]string, string]
	fail := func(format string, args ...any) result {
		message := fmt.Sprintf(format, args...)
		return result{Err: &message}
	}
	var out []string
	for i, text := range r.Objects {
		object, err := parseObject(fmt.Sprintf("object #%d", i), text)
		if err != nil {
			return fail("%s", AsError(err).Message)
		}
		where := fmt.Sprintf("object #%d (%s %q)", i, object.Kind(), object.Name())
		converter, ok := plugin().(Converter)
		if !ok {
			return fail("%s: this plugin converts no objects, and was asked to convert a %s", where, object.Kind())
		}
		converted, err := converter.Convert(object, r.DesiredApiVersion)
		if err != nil {
			return fail("%s: %v", where, err)
		}
		if converted == nil {
			return fail("%s: Convert returned no object", where)
		}
		text, err := ToJSON(converted)
		if err != nil {
			return fail("%s: the converted object does not encode to JSON: %v", where, err)
		}
		out = append(out, text)
	}
	return result{Ok: out}
}
