//! Ported from structured-merge-diff v4.6.0 `merge/multiple_appliers_test.go` (the version Kubernetes 1.33
//! vendors): each test is one upstream case, named after it.

use super::harness::Scenario;
use super::key::ASSOCIATIVE_LIST_PARSER;
use super::nested::NESTED_TYPE_PARSER;

/// The upstream `atomicMapParser` schema, in structured-merge-diff's schema language.
const ATOMIC_MAP_PARSER: &str = r#"
    types:
    - name: v1
      map:
        fields:
          - name: atomicMap
            type:
              namedType: atomicMap
    - name: atomicMap
      map:
        fields:
          - name: field1
            type:
              scalar: string
          - name: field2
            type:
              scalar: string
        elementRelationship: atomic
"#;

/// The upstream `structMultiversionParser` schema, in structured-merge-diff's schema language.
const STRUCT_MULTIVERSION_PARSER: &str = r#"
    types:
    - name: v1
      map:
        fields:
          - name: struct
            type:
              namedType: struct
          - name: version
            type:
              scalar: string
    - name: struct
      map:
        fields:
          - name: name
            type:
              scalar: string
          - name: scalarField_v1
            type:
              scalar: string
          - name: complexField_v1
            type:
              namedType: complex
    - name: complex
      map:
        fields:
          - name: name
            type:
              scalar: string
    - name: v2
      map:
        fields:
          - name: struct
            type:
              namedType: struct_v2
          - name: version
            type:
              scalar: string
    - name: struct_v2
      map:
        fields:
          - name: name
            type:
              scalar: string
          - name: scalarField_v2
            type:
              scalar: string
          - name: complexField_v2
            type:
              namedType: complex_v2
    - name: complex_v2
      map:
        fields:
          - name: name
            type:
              scalar: string
    - name: v3
      map:
        fields:
          - name: struct
            type:
              namedType: struct_v3
          - name: version
            type:
              scalar: string
    - name: struct_v3
      map:
        fields:
          - name: name
            type:
              scalar: string
          - name: scalarField_v3
            type:
              scalar: string
          - name: complexField_v3
            type:
              namedType: complex_v3
    - name: complex_v3
      map:
        fields:
          - name: name
            type:
              scalar: string
"#;

/// The case "updater_claims_field", which `TestMultipleAppliersFieldUnsetting` and
/// `TestMultipleAppliersFieldRenameConversions` share (versions v1-v1-v1).
fn updater_claims_field() -> Scenario {
    Scenario::new(STRUCT_MULTIVERSION_PARSER, "v1")
        .apply(
            "applier",
            "v1",
            r#"
            struct:
              name: a
              scalarField_v1: a
        "#,
        )
        .update(
            "updater",
            "v1",
            r#"
            struct:
              name: a
              scalarField_v1: b
        "#,
        )
        .object(
            r#"
            struct:
              name: a
              scalarField_v1: b
        "#,
        )
        .managed("updater", "v1", &[r#".struct.scalarField_v1"#])
        .managed("applier", "v1", &[r#".struct.name"#])
}

/// `TestMultipleAppliersFieldUnsetting`.
mod test_multiple_appliers_field_unsetting {
    use super::*;

    /// `TestMultipleAppliersFieldUnsetting`, case "unset_scalar_sole_owner" (versions v1-v1-v1; the other 26 version triples need conversion).
    #[tokio::test]
    async fn unset_scalar_sole_owner() {
        Scenario::new(STRUCT_MULTIVERSION_PARSER, "v1")
            .apply(
                "apply-one",
                "v1",
                r#"
                struct:
                  name: a
                  scalarField_v1: a
            "#,
            )
            .apply(
                "apply-one",
                "v1",
                r#"
                struct:
                  name: a
            "#,
            )
            .object(
                r#"
                struct:
                  name: a
            "#,
            )
            .managed("apply-one", "v1", &[r#".struct.name"#])
            .run()
            .await;
    }

    /// `TestMultipleAppliersFieldUnsetting`, case "unset_scalar_shared_with_applier" (versions v1-v1-v1; the other 26 version triples need conversion).
    #[tokio::test]
    async fn unset_scalar_shared_with_applier() {
        Scenario::new(STRUCT_MULTIVERSION_PARSER, "v1")
            .apply(
                "apply-one",
                "v1",
                r#"
                struct:
                  name: a
                  scalarField_v1: a
            "#,
            )
            .apply(
                "apply-two",
                "v1",
                r#"
                struct:
                  scalarField_v1: a
            "#,
            )
            .apply(
                "apply-one",
                "v1",
                r#"
                struct:
                  name: a
            "#,
            )
            .object(
                r#"
                struct:
                  name: a
                  scalarField_v1: a
            "#,
            )
            .managed("apply-one", "v1", &[r#".struct.name"#])
            .managed("apply-two", "v1", &[r#".struct.scalarField_v1"#])
            .run()
            .await;
    }

    /// `TestMultipleAppliersFieldUnsetting`, case "unset_scalar_shared_with_updater" (versions v1-v1-v1; the other 26 version triples need conversion).
    #[tokio::test]
    async fn unset_scalar_shared_with_updater() {
        Scenario::new(STRUCT_MULTIVERSION_PARSER, "v1")
            .update(
                "updater",
                "v1",
                r#"
                struct:
                  name: a
                  scalarField_v1: a
            "#,
            )
            .apply(
                "applier",
                "v1",
                r#"
                struct:
                  name: a
                  scalarField_v1: a
            "#,
            )
            .apply(
                "applier",
                "v1",
                r#"
                struct:
                  name: a
            "#,
            )
            .object(
                r#"
                struct:
                  name: a
                  scalarField_v1: a
            "#,
            )
            .managed("updater", "v1", &[r#".struct"#, r#".struct.name"#, r#".struct.scalarField_v1"#])
            .managed("applier", "v1", &[r#".struct.name"#])
            .run()
            .await;
    }

    /// `TestMultipleAppliersFieldUnsetting`, case "updater_claims_field" (versions v1-v1-v1; the other 26 version triples need conversion).
    #[tokio::test]
    async fn updater_claims_field() {
        super::updater_claims_field().run().await;
    }

    /// `TestMultipleAppliersFieldUnsetting`, case "unset_complex_sole_owner" (versions v1-v1-v1; the other 26 version triples need conversion).
    #[tokio::test]
    async fn unset_complex_sole_owner() {
        Scenario::new(STRUCT_MULTIVERSION_PARSER, "v1")
            .apply(
                "apply-one",
                "v1",
                r#"
                struct:
                  name: a
                  complexField_v1:
                    name: b
            "#,
            )
            .apply(
                "apply-one",
                "v1",
                r#"
                struct:
                  name: a
            "#,
            )
            .object(
                r#"
                struct:
                  name: a
            "#,
            )
            .managed("apply-one", "v1", &[r#".struct.name"#])
            .run()
            .await;
    }

    /// `TestMultipleAppliersFieldUnsetting`, case "unset_complex_shared_with_applier" (versions v1-v1-v1; the other 26 version triples need conversion).
    #[tokio::test]
    async fn unset_complex_shared_with_applier() {
        Scenario::new(STRUCT_MULTIVERSION_PARSER, "v1")
            .apply(
                "apply-one",
                "v1",
                r#"
                struct:
                  name: a
                  complexField_v1:
                    name: b
            "#,
            )
            .apply(
                "apply-two",
                "v1",
                r#"
                struct:
                  complexField_v1:
                    name: b
            "#,
            )
            .apply(
                "apply-one",
                "v1",
                r#"
                struct:
                  name: a
            "#,
            )
            .object(
                r#"
                struct:
                  name: a
                  complexField_v1:
                    name: b
            "#,
            )
            .managed("apply-one", "v1", &[r#".struct.name"#])
            .managed("apply-two", "v1", &[r#".struct.complexField_v1.name"#])
            .run()
            .await;
    }
}

/// `TestMultipleAppliersFieldRenameConversions`.
mod test_multiple_appliers_field_rename_conversions {
    /// `TestMultipleAppliersFieldRenameConversions`, case "updater_claims_field" (versions v1-v1-v1; the other 26 version triples need conversion).
    #[tokio::test]
    async fn updater_claims_field() {
        super::updater_claims_field().run().await;
    }
}

/// `TestMultipleAppliersSet`.
mod test_multiple_appliers_set {
    use super::*;

    /// `TestMultipleAppliersSet`, case "remove_one".
    #[tokio::test]
    async fn remove_one() {
        Scenario::new(ASSOCIATIVE_LIST_PARSER, "type")
            .apply(
                "apply-one",
                "v1",
                r#"
                list:
                - name: a
                - name: b
            "#,
            )
            .apply(
                "apply-two",
                "v2",
                r#"
                list:
                - name: c
            "#,
            )
            .apply(
                "apply-one",
                "v3",
                r#"
                list:
                - name: a
            "#,
            )
            .object(
                r#"
                list:
                - name: a
                - name: c
            "#,
            )
            .managed("apply-one", "v3", &[r#".list[name="a"]"#, r#".list[name="a"].name"#])
            .managed("apply-two", "v2", &[r#".list[name="c"]"#, r#".list[name="c"].name"#])
            .run()
            .await;
    }

    /// `TestMultipleAppliersSet`, case "same_value_no_conflict".
    #[tokio::test]
    async fn same_value_no_conflict() {
        Scenario::new(ASSOCIATIVE_LIST_PARSER, "type")
            .apply(
                "apply-one",
                "v1",
                r#"
                list:
                - name: a
                  value: 0
            "#,
            )
            .apply(
                "apply-two",
                "v2",
                r#"
                list:
                - name: a
                  value: 0
            "#,
            )
            .object(
                r#"
                list:
                - name: a
                  value: 0
            "#,
            )
            .managed("apply-one", "v1", &[r#".list[name="a"]"#, r#".list[name="a"].name"#, r#".list[name="a"].value"#])
            .managed("apply-two", "v2", &[r#".list[name="a"]"#, r#".list[name="a"].name"#, r#".list[name="a"].value"#])
            .run()
            .await;
    }

    /// `TestMultipleAppliersSet`, case "change_value_yes_conflict".
    #[tokio::test]
    async fn change_value_yes_conflict() {
        Scenario::new(ASSOCIATIVE_LIST_PARSER, "type")
            .apply(
                "apply-one",
                "v1",
                r#"
                list:
                - name: a
                  value: 0
            "#,
            )
            .apply(
                "apply-two",
                "v2",
                r#"
                list:
                - name: a
                  value: 1
            "#,
            )
            .conflicts(&[("apply-one", r#".list[name="a"].value"#)])
            .object(
                r#"
                list:
                - name: a
                  value: 0
            "#,
            )
            .managed("apply-one", "v1", &[r#".list[name="a"]"#, r#".list[name="a"].name"#, r#".list[name="a"].value"#])
            .run()
            .await;
    }

    /// `TestMultipleAppliersSet`, case "remove_one_keep_one".
    #[tokio::test]
    async fn remove_one_keep_one() {
        Scenario::new(ASSOCIATIVE_LIST_PARSER, "type")
            .apply(
                "apply-one",
                "v1",
                r#"
                list:
                - name: a
                - name: b
                - name: c
            "#,
            )
            .apply(
                "apply-two",
                "v2",
                r#"
                list:
                - name: c
                - name: d
            "#,
            )
            .apply(
                "apply-one",
                "v3",
                r#"
                list:
                - name: a
            "#,
            )
            .object(
                r#"
                list:
                - name: a
                - name: c
                - name: d
            "#,
            )
            .managed("apply-one", "v3", &[r#".list[name="a"]"#, r#".list[name="a"].name"#])
            .managed(
                "apply-two",
                "v2",
                &[r#".list[name="c"]"#, r#".list[name="d"]"#, r#".list[name="c"].name"#, r#".list[name="d"].name"#],
            )
            .run()
            .await;
    }
}

/// `TestMultipleAppliersNestedType`.
mod test_multiple_appliers_nested_type {
    use super::*;

    /// The cases "remove_one_keep_one_with_two_sub_items" and
    /// "remove_one_keep_one_with_sub_item", which upstream spells alike.
    fn remove_one_keep_one_with_sub_items() -> Scenario {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "apply-one",
                "v1",
                r#"
                listOfLists:
                - name: a
                - name: b
                  value:
                  - c
            "#,
            )
            .apply(
                "apply-two",
                "v2",
                r#"
                listOfLists:
                - name: b
                  value:
                  - d
            "#,
            )
            .apply(
                "apply-one",
                "v3",
                r#"
                listOfLists:
                - name: a
            "#,
            )
            .object(
                r#"
                listOfLists:
                - name: a
                - name: b
                  value:
                  - d
            "#,
            )
            .managed("apply-one", "v3", &[r#".listOfLists[name="a"]"#, r#".listOfLists[name="a"].name"#])
            .managed(
                "apply-two",
                "v2",
                &[
                    r#".listOfLists[name="b"]"#,
                    r#".listOfLists[name="b"].name"#,
                    r#".listOfLists[name="b"].value[="d"]"#,
                ],
            )
    }

    /// The cases "remove_one_with_dangling_subitem_keep_one" and
    /// "remove_one_with_managed_subitem_keep_one", which upstream spells alike.
    fn remove_one_with_subitem_keep_one() -> Scenario {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "apply-one",
                "v1",
                r#"
                listOfLists:
                - name: a
                - name: b
                  value:
                  - c
            "#,
            )
            .apply(
                "apply-two",
                "v2",
                r#"
                listOfLists:
                - name: a
                  value:
                  - b
            "#,
            )
            .update(
                "controller",
                "v2",
                r#"
                listOfLists:
                - name: a
                  value:
                  - b
                - name: b
                  value:
                  - c
                  - d
            "#,
            )
            .apply(
                "apply-one",
                "v3",
                r#"
                listOfLists:
                - name: a
            "#,
            )
            .object(
                r#"
                listOfLists:
                - name: a
                  value:
                  - b
            "#,
            )
            .managed("apply-one", "v3", &[r#".listOfLists[name="a"]"#, r#".listOfLists[name="a"].name"#])
            .managed(
                "apply-two",
                "v2",
                &[
                    r#".listOfLists[name="a"]"#,
                    r#".listOfLists[name="a"].name"#,
                    r#".listOfLists[name="a"].value[="b"]"#,
                ],
            )
    }

    /// `TestMultipleAppliersNestedType`, case "remove_one_keep_one_with_two_sub_items".
    #[tokio::test]
    async fn remove_one_keep_one_with_two_sub_items() {
        remove_one_keep_one_with_sub_items().run().await;
    }

    /// `TestMultipleAppliersNestedType`, case "remove_one_keep_one_with_dangling_subitem".
    #[tokio::test]
    async fn remove_one_keep_one_with_dangling_subitem() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "apply-one",
                "v1",
                r#"
                listOfLists:
                - name: a
                - name: b
                  value:
                  - c
            "#,
            )
            .apply(
                "apply-two",
                "v2",
                r#"
                listOfLists:
                - name: b
                  value:
                  - d
            "#,
            )
            .update(
                "controller",
                "v2",
                r#"
                listOfLists:
                - name: a
                - name: b
                  value:
                  - c
                  - d
                  - e
            "#,
            )
            .apply(
                "apply-one",
                "v3",
                r#"
                listOfLists:
                - name: a
            "#,
            )
            .object(
                r#"
                listOfLists:
                - name: a
                - name: b
                  value:
                  - d
                  - e
            "#,
            )
            .managed("apply-one", "v3", &[r#".listOfLists[name="a"]"#, r#".listOfLists[name="a"].name"#])
            .managed(
                "apply-two",
                "v2",
                &[
                    r#".listOfLists[name="b"]"#,
                    r#".listOfLists[name="b"].name"#,
                    r#".listOfLists[name="b"].value[="d"]"#,
                ],
            )
            .managed("controller", "v2", &[r#".listOfLists[name="b"].value[="e"]"#])
            .run()
            .await;
    }

    /// `TestMultipleAppliersNestedType`, case "remove_one_with_dangling_subitem_keep_one".
    #[tokio::test]
    async fn remove_one_with_dangling_subitem_keep_one() {
        remove_one_with_subitem_keep_one().run().await;
    }

    /// `TestMultipleAppliersNestedType`, case "remove_one_with_managed_subitem_keep_one".
    #[tokio::test]
    async fn remove_one_with_managed_subitem_keep_one() {
        remove_one_with_subitem_keep_one().run().await;
    }

    /// `TestMultipleAppliersNestedType`, case "remove_one_keep_one_with_sub_item".
    #[tokio::test]
    async fn remove_one_keep_one_with_sub_item() {
        remove_one_keep_one_with_sub_items().run().await;
    }

    /// `TestMultipleAppliersNestedType`, case "multiple_appliers_recursive_map".
    #[tokio::test]
    async fn multiple_appliers_recursive_map() {
        Scenario::new(NESTED_TYPE_PARSER, "type")
            .apply(
                "apply-one",
                "v1",
                r#"
                mapOfMapsRecursive:
                  a:
                    b:
                  c:
                    d:
            "#,
            )
            .apply(
                "apply-two",
                "v2",
                r#"
                mapOfMapsRecursive:
                  a:
                  c:
                    d:
            "#,
            )
            .update(
                "controller-one",
                "v3",
                r#"
                mapOfMapsRecursive:
                  a:
                    b:
                      c:
                  c:
                    d:
                      e:
            "#,
            )
            .update(
                "controller-two",
                "v2",
                r#"
                mapOfMapsRecursive:
                  a:
                    b:
                      c:
                        d:
                  c:
                    d:
                      e:
                        f:
            "#,
            )
            .update(
                "controller-one",
                "v3",
                r#"
                mapOfMapsRecursive:
                  a:
                    b:
                      c:
                        d:
                          e:
                  c:
                    d:
                      e:
                        f:
                          g:
            "#,
            )
            .apply("apply-one", "v4", r#"mapOfMapsRecursive:"#)
            .object(
                r#"
                mapOfMapsRecursive:
                  a:
                  c:
                    d:
                      e:
                        f:
                          g:
            "#,
            )
            .managed("apply-one", "v4", &[r#".mapOfMapsRecursive"#])
            .managed(
                "apply-two",
                "v2",
                &[r#".mapOfMapsRecursive.a"#, r#".mapOfMapsRecursive.c"#, r#".mapOfMapsRecursive.c.d"#],
            )
            .managed("controller-one", "v3", &[r#".mapOfMapsRecursive.c.d.e"#, r#".mapOfMapsRecursive.c.d.e.f.g"#])
            .managed("controller-two", "v2", &[r#".mapOfMapsRecursive.c.d.e.f"#])
            .run()
            .await;
    }
}

/// `TestMultipleAppliersDeducedType`.
mod test_multiple_appliers_deduced_type {
    use super::*;

    /// `TestMultipleAppliersDeducedType`, case "multiple_appliers_recursive_map_deduced".
    #[tokio::test]
    async fn multiple_appliers_recursive_map_deduced() {
        Scenario::deduced()
            .apply(
                "apply-one",
                "v1",
                r#"
                a:
                  b:
                c:
                  d:
            "#,
            )
            .apply(
                "apply-two",
                "v2",
                r#"
                a:
                c:
                  d:
            "#,
            )
            .update(
                "controller-one",
                "v3",
                r#"
                a:
                  b:
                    c:
                c:
                  d:
                    e:
            "#,
            )
            .update(
                "controller-two",
                "v2",
                r#"
                a:
                  b:
                    c:
                      d:
                c:
                  d:
                    e:
                      f:
            "#,
            )
            .update(
                "controller-one",
                "v3",
                r#"
                a:
                  b:
                    c:
                      d:
                        e:
                c:
                  d:
                    e:
                      f:
                        g:
            "#,
            )
            .apply("apply-one", "v4", r#""#)
            .object(
                r#"
                a:
                c:
                  d:
                    e:
                      f:
                        g:
            "#,
            )
            .managed("apply-two", "v2", &[r#".a"#, r#".c"#, r#".c.d"#])
            .managed("controller-one", "v3", &[r#".c.d.e"#, r#".c.d.e.f.g"#])
            .managed("controller-two", "v2", &[r#".c.d.e.f"#])
            .run()
            .await;
    }
}

/// `TestMultipleApplierAtomicMaps`.
mod test_multiple_applier_atomic_maps {
    use super::*;

    /// `TestMultipleApplierAtomicMaps`, case "force".
    #[tokio::test]
    async fn force() {
        Scenario::new(ATOMIC_MAP_PARSER, "v1")
            .apply(
                "apply-one",
                "v1",
                r#"
                atomicMap:
                  field1: a
            "#,
            )
            .apply(
                "apply-two",
                "v1",
                r#"
                atomicMap:
                  field2: b
            "#,
            )
            .conflicts(&[("apply-one", r#".atomicMap"#)])
            .force_apply(
                "apply-two",
                "v1",
                r#"
                atomicMap:
                  field2: b
            "#,
            )
            .object(
                r#"
                atomicMap:
                  field2: b
            "#,
            )
            .managed("apply-two", "v1", &[r#".atomicMap"#])
            .run()
            .await;
    }
}
