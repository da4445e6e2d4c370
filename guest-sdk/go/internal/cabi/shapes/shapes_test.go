package shapes

// The generated bindings of every shape the generator supports (wit/codegen/tests/abi)
// carry each value through the canonical ABI and back unchanged: lowered as the host
// lowers arguments, lifted by the export's entry, lowered again as its result, lifted as
// the host lifts it.

import (
	"reflect"
	"testing"

	"kubewasm.dev/sdk/internal/cabi"
)

func scalars(n int) Scalars {
	return Scalars{
		B: n%2 == 0, U8: uint8(200 + n), S8: int8(-100 - n), U16: 60000, S16: -30000, U32: 4000000000,
		S32: -2000000000, U64: 1<<63 + uint64(n), S64: -1 << 62, F32: 1.5, F64: -2.25e300, C: 'ß', S: "ünï",
	}
}

func ptr[T any](v T) *T { return &v }

func values() []Value {
	return []Value{
		{Tag: ValueNone},
		{Tag: ValueSmall, Small: 7},
		{Tag: ValueFloat, Float: -3.5},
		{Tag: ValueDouble, Double: 1e-300},
		{Tag: ValueBig, Big: -9000000000},
		{Tag: ValueText, Text: "text"},
		{Tag: ValueNested, Nested: scalars(1)},
		{Tag: ValueMany, Many: []Scalars{scalars(2), scalars(3)}},
	}
}

func everything() Everything {
	return Everything{
		Scalars:     scalars(0),
		Color:       ColorBlue,
		Access:      AccessRead | AccessExec,
		Values:      values(),
		Maybe:       ptr("maybe"),
		MaybeRecord: ptr(scalars(4)),
		MaybeU64:    ptr(uint64(1) << 40),
		Pair:        [2]string{"a", "b"},
		Mixed:       Tuple3[uint8, string, float64]{9, "mixed", 0.5},
		Outcome:     cabi.Result[string, Color]{Err: ptr(ColorGreen)},
		OnlyOk:      cabi.Result[uint32, struct{}]{Ok: 42},
		OnlyErr:     cabi.Result[struct{}, string]{Err: ptr("failed")},
		Bare:        cabi.Result[struct{}, struct{}]{Err: &struct{}{}},
		Nested:      [][]string{{"x"}, nil, {"y", "z"}},
		Options:     []*Value{nil, ptr(values()[2]), ptr(values()[7])},
	}
}

func roundTrip[T any](t *testing.T, what string, call func(m cabi.Memory, v T) T, v T) {
	t.Helper()
	if got := call(&cabi.Arena{}, v); !reflect.DeepEqual(got, v) {
		t.Errorf("%s:\n got %#v\nwant %#v", what, got, v)
	}
}

func TestEveryShapeCrossesUnchanged(t *testing.T) {
	Exports.Echo.EchoEverything = func(e Everything) Everything { return e }
	Exports.Echo.EchoValue = func(v Value) Value { return v }
	Exports.Echo.EchoColor = func(c Color) Color { return c }
	Exports.Echo.Maybe = func(v *Value) cabi.Result[*Scalars, string] {
		if v == nil {
			return cabi.Result[*Scalars, string]{Err: ptr("none")}
		}
		if v.Tag == ValueNested {
			return cabi.Result[*Scalars, string]{Ok: &v.Nested}
		}
		return cabi.Result[*Scalars, string]{}
	}
	Exports.Ping = func(n uint32) uint32 { return n + 1 }
	Exports.More.First = func(items []Scalars) *Scalars {
		if len(items) == 0 {
			return nil
		}
		return &items[0]
	}

	roundTrip(t, "a record of every shape, passed in memory", CallEchoEchoEverything, everything())
	for _, v := range values() {
		roundTrip(t, "a variant case, flat", CallEchoEchoValue, v)
	}
	roundTrip(t, "an enum, one flat result", CallEchoEchoColor, ColorGreen)

	m := &cabi.Arena{}
	if got := CallEchoMaybe(m, nil); got.Err == nil || *got.Err != "none" {
		t.Errorf("an absent option: %#v", got)
	}
	nested := values()[6]
	if got := CallEchoMaybe(m, &nested); got.Err != nil || !reflect.DeepEqual(*got.Ok, scalars(1)) {
		t.Errorf("an option of a variant, to a result of an option: %#v", got)
	}
	if got := CallPing(m, 41); got != 42 {
		t.Errorf("a function of the world itself: %d", got)
	}
	if got := CallMoreFirst(m, []Scalars{scalars(5), scalars(6)}); !reflect.DeepEqual(*got, scalars(5)) {
		t.Errorf("a second exported interface: %#v", got)
	}
}

func TestTwentyParametersArePassedInMemory(t *testing.T) {
	Exports.Echo.Many = func(a, b, c, d, e, f, g, h, i, j uint64, k, l, m, n, o, p string, q float32, r float64, s TypesLevel, u bool) Tuple6[uint64, string, float32, float64, TypesLevel, bool] {
		return Tuple6[uint64, string, float32, float64, TypesLevel, bool]{a + b + c + d + e + f + g + h + i + j, k + l + m + n + o + p, q, r, s, u}
	}
	got := CallEchoMany(&cabi.Arena{}, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, "k", "l", "m", "n", "o", "p", 0.25, -8, TypesLevelHigh, true)
	want := Tuple6[uint64, string, float32, float64, TypesLevel, bool]{55, "klmnop", 0.25, -8, TypesLevelHigh, true}
	if got != want {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func TestAFunctionWithoutResultRuns(t *testing.T) {
	ran := false
	Exports.Echo.Nothing = func() { ran = true }
	CallEchoNothing(&cabi.Arena{})
	if !ran {
		t.Error("the export did not run")
	}
}
