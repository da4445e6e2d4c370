//! structured-merge-diff v4.6.0 `merge/duplicates_test.go` starts every case with a controller
//! writing a set or map list that holds an item twice, which the library tolerates for
//! built-in objects decoded from old data. A custom resource cannot hold one: the server
//! refuses the write (`Duplicate value`), as the real server's list-type validation does. So
//! the cases are listed as not expressible in README.md, and these tests prove why.

use super::harness::Scenario;

/// The upstream `duplicatesParser` schema, in structured-merge-diff's schema language.
const DUPLICATES_PARSER: &str = r#"
    types:
    - name: type
      map:
        fields:
          - name: list
            type:
              namedType: associativeList
          - name: unrelated
            type:
              scalar: numeric
          - name: set
            type:
              namedType: set
    - name: associativeList
      list:
        elementType:
          namedType: myElement
        elementRelationship: associative
        keys:
        - name
    - name: myElement
      map:
        fields:
        - name: name
          type:
            scalar: string
        - name: value1
          type:
            scalar: numeric
        - name: value2
          type:
            scalar: numeric
    - name: set
      list:
        elementType:
          scalar: numeric
        elementRelationship: associative
"#;

/// `TestDuplicates`, first operation of the "sets/..." cases.
#[tokio::test]
async fn a_set_with_a_duplicate_is_refused() {
    Scenario::new(DUPLICATES_PARSER, "type").update_refused("updater-one", "v1", "set: [1, 1, 3, 4]").run().await;
}

/// `TestDuplicates`, first operation of the "list/..." cases.
#[tokio::test]
async fn a_map_list_with_a_duplicate_key_is_refused() {
    Scenario::new(DUPLICATES_PARSER, "type")
        .update_refused(
            "updater",
            "v1",
            r#"
            list:
            - name: a
              value1: 1
            - name: a
              value1: 2
            - name: b
              value1: 3
        "#,
        )
        .run()
        .await;
}
