//! Ported from structured-merge-diff v4.6.0 `merge/default_keys_test.go` (the version Kubernetes 1.33
//! vendors): each test is one upstream case, named after it.

use super::harness::Scenario;

/// The upstream `bookParser` schema, in structured-merge-diff's schema language.
const BOOK_PARSER: &str = r#"
    types:
    - name: v1
      map:
        fields:
          - name: book
            type:
              list:
                elementType:
                  map:
                    fields:
                    - name: chapter
                      default: 1
                      type:
                        scalar: numeric
                    - name: section
                      default: "A"
                      type:
                        scalar: string
                    - name: sentences
                      type:
                        list:
                          elementType:
                            map:
                              fields:
                              - name: page
                                default: 2.0
                                type:
                                  scalar: numeric
                              - name: line
                                default: 3
                                type:
                                  scalar: numeric
                              - name: text
                                type:
                                  scalar: string
                          elementRelationship: associative
                          keys:
                          - page
                          - line
                elementRelationship: associative
                keys:
                - chapter
                - section
"#;

/// The upstream `portListParser` schema, in structured-merge-diff's schema language.
const PORT_LIST_PARSER: &str = r#"
    types:
    - name: v1
      map:
        fields:
          - name: containerPorts
            type:
              list:
                elementType:
                  map:
                    fields:
                    - name: port
                      type:
                        scalar: numeric
                    - name: protocol
                      default: "TCP"
                      type:
                        scalar: string
                    - name: name
                      type:
                        scalar: string
                elementRelationship: associative
                keys:
                - port
                - protocol
"#;

/// `TestDefaultKeysFlat`.
mod test_default_keys_flat {
    use super::*;

    /// `TestDefaultKeysFlat`, case "apply_missing_defaulted_key_A".
    #[tokio::test]
    async fn apply_missing_defaulted_key_a() {
        Scenario::new(PORT_LIST_PARSER, "v1")
            .apply(
                "default",
                "v1",
                r#"
                containerPorts:
                - port: 80
            "#,
            )
            .object(
                r#"
                containerPorts:
                - port: 80
            "#,
            )
            .managed(
                "default",
                "v1",
                &[r#".containerPorts[port=80,protocol="TCP"]"#, r#".containerPorts[port=80,protocol="TCP"].port"#],
            )
            .run()
            .await;
    }

    /// `TestDefaultKeysFlat`, case "apply_missing_defaulted_key_B".
    #[tokio::test]
    async fn apply_missing_defaulted_key_b() {
        Scenario::new(PORT_LIST_PARSER, "v1")
            .apply(
                "default",
                "v1",
                r#"
                containerPorts:
                - port: 80
                - port: 80
                  protocol: UDP
            "#,
            )
            .object(
                r#"
                containerPorts:
                - port: 80
                - port: 80
                  protocol: UDP
            "#,
            )
            .managed(
                "default",
                "v1",
                &[
                    r#".containerPorts[port=80,protocol="TCP"]"#,
                    r#".containerPorts[port=80,protocol="TCP"].port"#,
                    r#".containerPorts[port=80,protocol="UDP"]"#,
                    r#".containerPorts[port=80,protocol="UDP"].port"#,
                    r#".containerPorts[port=80,protocol="UDP"].protocol"#,
                ],
            )
            .run()
            .await;
    }

    /// `TestDefaultKeysFlat`, case "apply_missing_defaulted_key_with_conflict".
    #[tokio::test]
    async fn apply_missing_defaulted_key_with_conflict() {
        Scenario::new(PORT_LIST_PARSER, "v1")
            .apply(
                "apply-one",
                "v1",
                r#"
                containerPorts:
                - port: 80
                  protocol: TCP
                  name: foo
            "#,
            )
            .apply(
                "apply-two",
                "v1",
                r#"
                containerPorts:
                - port: 80
                  name: bar
            "#,
            )
            .conflicts(&[("apply-one", r#".containerPorts[port=80,protocol="TCP"].name"#)])
            .object(
                r#"
                containerPorts:
                - port: 80
                  protocol: TCP
                  name: foo
            "#,
            )
            .managed(
                "apply-one",
                "v1",
                &[
                    r#".containerPorts[port=80,protocol="TCP"]"#,
                    r#".containerPorts[port=80,protocol="TCP"].port"#,
                    r#".containerPorts[port=80,protocol="TCP"].protocol"#,
                    r#".containerPorts[port=80,protocol="TCP"].name"#,
                ],
            )
            .run()
            .await;
    }
}

/// `TestDefaultKeysFlatErrors`.
mod test_default_keys_flat_errors {
    use super::*;

    /// `TestDefaultKeysFlatErrors`, case "apply_missing_undefaulted_defaulted_key".
    #[tokio::test]
    async fn apply_missing_undefaulted_defaulted_key() {
        Scenario::new(PORT_LIST_PARSER, "v1")
            .apply_refused(
                "default",
                "v1",
                r#"
                containerPorts:
                - protocol: TCP
            "#,
            )
            .run()
            .await;
    }

    /// `TestDefaultKeysFlatErrors`, case "apply_missing_defaulted_key_ambiguous_A".
    #[tokio::test]
    async fn apply_missing_defaulted_key_ambiguous_a() {
        Scenario::new(PORT_LIST_PARSER, "v1")
            .apply_refused(
                "default",
                "v1",
                r#"
                containerPorts:
                - port: 80
                - port: 80
            "#,
            )
            .run()
            .await;
    }

    /// `TestDefaultKeysFlatErrors`, case "apply_missing_defaulted_key_ambiguous_B".
    #[tokio::test]
    async fn apply_missing_defaulted_key_ambiguous_b() {
        Scenario::new(PORT_LIST_PARSER, "v1")
            .apply_refused(
                "default",
                "v1",
                r#"
                containerPorts:
                - port: 80
                - port: 80
                  protocol: TCP
            "#,
            )
            .run()
            .await;
    }
}

/// `TestDefaultKeysNested`.
mod test_default_keys_nested {
    use super::*;

    /// `TestDefaultKeysNested`, case "apply_missing_every_key_nested".
    #[tokio::test]
    async fn apply_missing_every_key_nested() {
        Scenario::new(BOOK_PARSER, "v1")
            .apply(
                "default",
                "v1",
                r#"
                book:
                - sentences:
                  - text: blah
            "#,
            )
            .object(
                r#"
                book:
                - sentences:
                  - text: blah
            "#,
            )
            .managed(
                "default",
                "v1",
                &[
                    r#".book[chapter=1,section="A"]"#,
                    r#".book[chapter=1,section="A"].sentences[line=3,page=2]"#,
                    r#".book[chapter=1,section="A"].sentences[line=3,page=2].text"#,
                ],
            )
            .run()
            .await;
    }

    /// `TestDefaultKeysNested`, case "apply_integer_key_with_float_default".
    #[tokio::test]
    async fn apply_integer_key_with_float_default() {
        Scenario::new(BOOK_PARSER, "v1")
            .apply(
                "default",
                "v1",
                r#"
                book:
                - sentences:
                  - text: blah
            "#,
            )
            .apply(
                "default",
                "v1",
                r#"
                book:
                - sentences:
                  - text: blah
                    page: 2
            "#,
            )
            .object(
                r#"
                book:
                - sentences:
                  - text: blah
                    page: 2
            "#,
            )
            .managed(
                "default",
                "v1",
                &[
                    r#".book[chapter=1,section="A"]"#,
                    r#".book[chapter=1,section="A"].sentences[line=3,page=2]"#,
                    r#".book[chapter=1,section="A"].sentences[line=3,page=2].text"#,
                    r#".book[chapter=1,section="A"].sentences[line=3,page=2].page"#,
                ],
            )
            .run()
            .await;
    }
}
