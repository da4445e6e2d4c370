//! Ported from structured-merge-diff v4.6.0 `merge/schema_change_test.go` (the version
//! Kubernetes 1.33 vendors): upstream's `ChangeParser` is an update of the CRD's schema.

use super::harness::Scenario;

/// The upstream `structParser` schema: `struct` is a granular map.
const STRUCT_PARSER: &str = r#"
    types:
    - name: v1
      map:
        fields:
          - name: struct
            type:
              namedType: struct
    - name: struct
      map:
        fields:
        - name: numeric
          type:
            scalar: numeric
        - name: string
          type:
            scalar: string
"#;

/// The upstream `structWithAtomicParser` schema: `struct` is an atomic map.
const STRUCT_WITH_ATOMIC_PARSER: &str = r#"
    types:
    - name: v1
      map:
        fields:
          - name: struct
            type:
              namedType: struct
    - name: struct
      map:
        fields:
        - name: numeric
          type:
            scalar: numeric
        - name: string
          type:
            scalar: string
        elementRelationship: atomic
"#;

/// `TestGranularToAtomicSchemaChanges`.
mod test_granular_to_atomic_schema_changes {
    use super::*;

    /// `TestGranularToAtomicSchemaChanges`, case "to-atomic".
    #[tokio::test]
    async fn to_atomic() {
        Scenario::new(STRUCT_PARSER, "v1")
            .apply("one", "v1", "struct: {numeric: 1}")
            .change_schema(STRUCT_WITH_ATOMIC_PARSER, "v1")
            .apply("two", "v1", "struct: {string: string}")
            .conflicts(&[("one", ".struct")])
            .force_apply("two", "v1", "struct: {string: string}")
            .object("struct: {string: string}")
            .managed("two", "v1", &[".struct"])
            .run()
            .await;
    }

    /// `TestGranularToAtomicSchemaChanges`, case "to-atomic-owner-with-no-child-fields".
    #[tokio::test]
    async fn to_atomic_owner_with_no_child_fields() {
        Scenario::new(STRUCT_PARSER, "v1")
            .apply("one", "v1", "struct: {numeric: 1}")
            // Takes the only child field from "one".
            .force_apply("two", "v1", "struct: {numeric: 2}")
            .change_schema(STRUCT_WITH_ATOMIC_PARSER, "v1")
            .apply("three", "v1", "struct: {string: string}")
            // No conflict with "one": a manager owning no child of the map does not own it.
            .conflicts(&[("two", ".struct")])
            .force_apply("two", "v1", "struct: {string: string}")
            .object("struct: {string: string}")
            .managed("two", "v1", &[".struct"])
            .run()
            .await;
    }
}

/// `TestAtomicToGranularSchemaChanges`.
mod test_atomic_to_granular_schema_changes {
    use super::*;

    /// `TestAtomicToGranularSchemaChanges`, case "to-granular".
    #[tokio::test]
    async fn to_granular() {
        Scenario::new(STRUCT_WITH_ATOMIC_PARSER, "v1")
            .apply("one", "v1", "struct: {numeric: 1, string: a}")
            .apply("two", "v1", "struct: {string: b}")
            .conflicts(&[("one", ".struct")])
            .change_schema(STRUCT_PARSER, "v1")
            // No conflict once struct is granular; "one" keeps owning the whole struct path
            // (upstream's known limitation: it cannot tell that the path was atomic).
            .apply("two", "v1", "struct: {string: b}")
            .object("struct: {numeric: 1, string: b}")
            .managed("one", "v1", &[".struct"])
            .managed("two", "v1", &[".struct.string"])
            .run()
            .await;
    }
}
