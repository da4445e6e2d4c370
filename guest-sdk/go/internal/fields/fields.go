// Package fields copies what two structs share: the fields of the same name and type.
// The contract's fields that reach a plugin as they were sent (a flag, a text) go this
// way between the generated records of package wire and the SDK's own types, so a new
// one needs no conversion code.
package fields

import "reflect"

// Copy sets each field of *dst from the field of src (a struct or a pointer to one)
// with the same name and type; the others are left as they are.
func Copy(dst, src any) {
	d := reflect.ValueOf(dst).Elem()
	s := reflect.Indirect(reflect.ValueOf(src))
	for i := 0; i < s.NumField(); i++ {
		field := s.Type().Field(i)
		if !field.IsExported() {
			continue
		}
		if target := d.FieldByName(field.Name); target.IsValid() && target.Type() == field.Type && target.CanSet() {
			target.Set(s.Field(i))
		}
	}
}
