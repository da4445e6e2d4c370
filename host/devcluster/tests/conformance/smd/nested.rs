//! Ported from structured-merge-diff v4.6.0 `merge/nested_test.go` (the version Kubernetes 1.33
//! vendors): each test is one upstream case, named after it.

use super::harness::Scenario;

/// The upstream `nestedTypeParser` schema, in structured-merge-diff's schema language.
pub(super) const NESTED_TYPE_PARSER: &str = r#"
    types:
    - name: type
      map:
        fields:
          - name: listOfLists
            type:
              namedType: listOfLists
          - name: listOfMaps
            type:
              namedType: listOfMaps
          - name: mapOfLists
            type:
              namedType: mapOfLists
          - name: mapOfMaps
            type:
              namedType: mapOfMaps
          - name: mapOfMapsRecursive
            type:
              namedType: mapOfMapsRecursive
          - name: struct
            type:
              namedType: struct
    - name: struct
      map:
        fields:
        - name: name
          type:
            scalar: string
        - name: value
          type:
            scalar: numeric
    - name: listOfLists
      list:
        elementType:
          map:
            fields:
            - name: name
              type:
                scalar: string
            - name: value
              type:
                namedType: list
        elementRelationship: associative
        keys:
        - name
    - name: list
      list:
        elementType:
          scalar: string
        elementRelationship: associative
    - name: listOfMaps
      list:
        elementType:
          map:
            fields:
            - name: name
              type:
                scalar: string
            - name: value
              type:
                namedType: map
        elementRelationship: associative
        keys:
        - name
    - name: map
      map:
        elementType:
          scalar: string
        elementRelationship: associative
    - name: mapOfLists
      map:
        elementType:
          namedType: list
        elementRelationship: associative
    - name: mapOfMaps
      map:
        elementType:
          namedType: map
        elementRelationship: associative
    - name: mapOfMapsRecursive
      map:
        elementType:
          namedType: mapOfMapsRecursive
        elementRelationship: associative
"#;

/// `TestUpdateNestedType`.
mod test_update_nested_type {
    use super::*;

    /// `TestUpdateNestedType`, case "listOfLists_change_value".
    #[tokio::test]
    async fn list_of_lists_change_value() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                listOfLists:
                - name: a
                  value:
                  - b
                  - c
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                listOfLists:
                - name: a
                  value:
                  - a
                  - c
            "#,
            )
            .object(
                r#"
                listOfLists:
                - name: a
                  value:
                  - a
                  - c
            "#,
            )
            .managed(
                "default",
                "v1",
                &[
                    r#".listOfLists[name="a"]"#,
                    r#".listOfLists[name="a"].name"#,
                    r#".listOfLists[name="a"].value[="a"]"#,
                    r#".listOfLists[name="a"].value[="c"]"#,
                ],
            )
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "listOfLists_change_key_and_value".
    #[tokio::test]
    async fn list_of_lists_change_key_and_value() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                listOfLists:
                - name: a
                  value:
                  - b
                  - c
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                listOfLists:
                - name: b
                  value:
                  - a
                  - c
            "#,
            )
            .object(
                r#"
                listOfLists:
                - name: b
                  value:
                  - a
                  - c
            "#,
            )
            .managed(
                "default",
                "v1",
                &[
                    r#".listOfLists[name="b"]"#,
                    r#".listOfLists[name="b"].name"#,
                    r#".listOfLists[name="b"].value[="a"]"#,
                    r#".listOfLists[name="b"].value[="c"]"#,
                ],
            )
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "listOfMaps_change_value".
    #[tokio::test]
    async fn list_of_maps_change_value() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                listOfMaps:
                - name: a
                  value:
                    b: "x"
                    c: "y"
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                listOfMaps:
                - name: a
                  value:
                    a: "x"
                    c: "z"
            "#,
            )
            .object(
                r#"
                listOfMaps:
                - name: a
                  value:
                    a: "x"
                    c: "z"
            "#,
            )
            .managed(
                "default",
                "v1",
                &[
                    r#".listOfMaps[name="a"]"#,
                    r#".listOfMaps[name="a"].name"#,
                    r#".listOfMaps[name="a"].value.a"#,
                    r#".listOfMaps[name="a"].value.c"#,
                ],
            )
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "listOfMaps_change_key_and_value".
    #[tokio::test]
    async fn list_of_maps_change_key_and_value() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                listOfMaps:
                - name: a
                  value:
                    b: "x"
                    c: "y"
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                listOfMaps:
                - name: b
                  value:
                    a: "x"
                    c: "z"
            "#,
            )
            .object(
                r#"
                listOfMaps:
                - name: b
                  value:
                    a: "x"
                    c: "z"
            "#,
            )
            .managed(
                "default",
                "v1",
                &[
                    r#".listOfMaps[name="b"]"#,
                    r#".listOfMaps[name="b"].name"#,
                    r#".listOfMaps[name="b"].value.a"#,
                    r#".listOfMaps[name="b"].value.c"#,
                ],
            )
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "mapOfLists_change_value".
    #[tokio::test]
    async fn map_of_lists_change_value() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                mapOfLists:
                  a:
                  - b
                  - c
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                mapOfLists:
                  a:
                  - a
                  - c
            "#,
            )
            .object(
                r#"
                mapOfLists:
                  a:
                  - a
                  - c
            "#,
            )
            .managed("default", "v1", &[r#".mapOfLists.a"#, r#".mapOfLists.a[="a"]"#, r#".mapOfLists.a[="c"]"#])
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "mapOfLists_change_key_and_value".
    #[tokio::test]
    async fn map_of_lists_change_key_and_value() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                mapOfLists:
                  a:
                  - b
                  - c
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                mapOfLists:
                  b:
                  - a
                  - c
            "#,
            )
            .object(
                r#"
                mapOfLists:
                  b:
                  - a
                  - c
            "#,
            )
            .managed("default", "v1", &[r#".mapOfLists.b"#, r#".mapOfLists.b[="a"]"#, r#".mapOfLists.b[="c"]"#])
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "mapOfMaps_change_value".
    #[tokio::test]
    async fn map_of_maps_change_value() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                mapOfMaps:
                  a:
                    b: "x"
                    c: "y"
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                mapOfMaps:
                  a:
                    a: "x"
                    c: "z"
            "#,
            )
            .object(
                r#"
                mapOfMaps:
                  a:
                    a: "x"
                    c: "z"
            "#,
            )
            .managed("default", "v1", &[r#".mapOfMaps.a"#, r#".mapOfMaps.a.a"#, r#".mapOfMaps.a.c"#])
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "mapOfMaps_change_key_and_value".
    #[tokio::test]
    async fn map_of_maps_change_key_and_value() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                mapOfMaps:
                  a:
                    b: "x"
                    c: "y"
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                mapOfMaps:
                  b:
                    a: "x"
                    c: "z"
            "#,
            )
            .object(
                r#"
                mapOfMaps:
                  b:
                    a: "x"
                    c: "z"
            "#,
            )
            .managed("default", "v1", &[r#".mapOfMaps.b"#, r#".mapOfMaps.b.a"#, r#".mapOfMaps.b.c"#])
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "mapOfMapsRecursive_change_middle_key".
    #[tokio::test]
    async fn map_of_maps_recursive_change_middle_key() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                mapOfMapsRecursive:
                  a:
                    b:
                      c:
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                mapOfMapsRecursive:
                  a:
                    d:
                      c:
            "#,
            )
            .object(
                r#"
                mapOfMapsRecursive:
                  a:
                    d:
                      c:
            "#,
            )
            .managed(
                "default",
                "v1",
                &[r#".mapOfMapsRecursive.a"#, r#".mapOfMapsRecursive.a.d"#, r#".mapOfMapsRecursive.a.d.c"#],
            )
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "struct_apply_remove_all".
    #[tokio::test]
    async fn struct_apply_remove_all() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                struct:
                  name: a
                  value: 1
            "#,
            )
            .apply("default", "v1", r#""#)
            .no_managers()
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "struct_apply_remove_dangling".
    #[tokio::test]
    async fn struct_apply_remove_dangling() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                struct:
                  name: a
            "#,
            )
            .apply("default", "v1", r#"struct:"#)
            .object(r#"struct:"#)
            .managed("default", "v1", &[r#".struct"#])
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "struct_apply_update_remove_all".
    #[tokio::test]
    async fn struct_apply_update_remove_all() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                struct:
                  name: a
            "#,
            )
            .update(
                "controller",
                "v1",
                r#"
                struct:
                  name: a
                  value: 1
            "#,
            )
            .apply("default", "v1", r#""#)
            .object(
                r#"
                struct:
                  value: 1
            "#,
            )
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "struct_apply_update_dict_dangling".
    #[tokio::test]
    async fn struct_apply_update_dict_dangling() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                struct:
                  name: a
            "#,
            )
            .update(
                "controller",
                "v1",
                r#"
                struct:
                  name: a
                  value: 1
            "#,
            )
            .apply("default", "v1", r#"struct: {}"#)
            .object(
                r#"
                struct:
                  value: 1
            "#,
            )
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "struct_apply_update_dict_null".
    #[tokio::test]
    async fn struct_apply_update_dict_null() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                struct:
                  name: a
            "#,
            )
            .update(
                "controller",
                "v1",
                r#"
                struct:
                  name: a
                  value: 1
            "#,
            )
            .apply("default", "v1", r#"struct:"#)
            .object(
                r#"
                struct:
                  value: 1
            "#,
            )
            .run()
            .await;
    }

    /// `TestUpdateNestedType`, case "struct_apply_update_took_over".
    #[tokio::test]
    async fn struct_apply_update_took_over() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "default",
                "v1",
                r#"
                struct:
                  name: a
            "#,
            )
            .update(
                "controller",
                "v1",
                r#"
                struct:
                  name: b
                  value: 1
            "#,
            )
            .apply("default", "v1", r#"struct:"#)
            .object(
                r#"
                struct:
                  name: b
                  value: 1
            "#,
            )
            .run()
            .await;
    }
}
