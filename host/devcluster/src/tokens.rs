//! Service-account tokens as JSON Web Tokens: signed with the cluster's service-account key
//! (ES256, P-256), checked as kube-apiserver's JWT authenticator checks them (signature, issuer,
//! audience, validity with a minute of leeway), and the key published at `/openid/v1/jwks`
//! with `/.well-known/openid-configuration` (`pkg/serviceaccount/jwt.go`, `openidmetadata.go`).
//! What a token's claims name (the service account and the object it is bound to) is checked
//! against the store by the kinds, not here.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rcgen::{KeyPair, PublicKeyData};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, UnparsedPublicKey};
use serde_json::{Value, json};

use super::status::go_quote;

/// The issuer (`--service-account-issuer`) and the one API audience (`--api-audiences`
/// defaults to the issuer), as kind and kubeadm configure them.
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// How far `exp` and `nbf` may be off (`jwt.DefaultLeeway`).
const LEEWAY_SECONDS: i64 = 60;

/// Why a bearer token is not a valid service-account token of this server. The texts are
/// kube-apiserver's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenError {
    /// Not a JWT signed by this server's key (another issuer's, or no JWT at all): upstream's
    /// authenticator does not claim it, and the request is refused as an invalid bearer token.
    #[error("invalid bearer token")]
    NotOurs,
    #[error("service account token has expired")]
    Expired,
    #[error("service account token is not valid yet")]
    NotValidYet,
    /// Signed by this server, but for other audiences than the ones asked for.
    #[error("token audiences {} is invalid for the target audiences {}", go_quoted(.0), go_quoted(.1))]
    Audience(Vec<String>, Vec<String>),
    /// The claims name an object that is gone or was replaced.
    #[error("{0}")]
    Invalidated(String),
}

/// Signs and verifies tokens with the service-account key. Made once per start.
pub(crate) struct Signer {
    key: EcdsaKeyPair,
    public: Vec<u8>,
    kid: String,
    rng: SystemRandom,
}

impl Signer {
    /// A signer with `key` (an ECDSA P-256 key pair).
    pub(crate) fn new(key: &KeyPair) -> Result<Signer, String> {
        let rng = SystemRandom::new();
        let signing = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, key.serialized_der(), &rng)
            .map_err(|e| format!("the service-account key is not an ECDSA P-256 key: {e}"))?;
        let spki = key.subject_public_key_info();
        let kid = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, &spki));
        Ok(Signer { key: signing, public: key.public_key_raw().to_vec(), kid, rng })
    }

    /// The compact JWS of `claims`.
    pub(crate) fn sign(&self, claims: &Value) -> Result<String, String> {
        let header = json!({ "alg": "ES256", "kid": self.kid });
        let input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let signature =
            self.key.sign(&self.rng, input.as_bytes()).map_err(|e| format!("could not sign a token: {e}"))?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref())))
    }

    /// The claims of a token this server signed, checked for issuer, validity at `now` (Unix
    /// seconds) and, when `audiences` is not empty, an audience among them.
    pub(crate) fn verify(&self, token: &str, audiences: &[String], now: i64) -> Result<Value, TokenError> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::NotOurs);
        };
        let decode = |part: &str| URL_SAFE_NO_PAD.decode(part).map_err(|_| TokenError::NotOurs);
        let header: Value = serde_json::from_slice(&decode(header)?).map_err(|_| TokenError::NotOurs)?;
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return Err(TokenError::NotOurs);
        }
        let signed = token.len() - signature.len() - 1;
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &self.public)
            .verify(&token.as_bytes()[..signed], &decode(signature)?)
            .map_err(|_| TokenError::NotOurs)?;
        let claims: Value = serde_json::from_slice(&decode(payload)?).map_err(|_| TokenError::NotOurs)?;
        if claims.get("iss").and_then(Value::as_str) != Some(ISSUER) {
            return Err(TokenError::NotOurs);
        }
        let number = |name: &str| claims.get(name).and_then(Value::as_i64);
        if number("exp").is_some_and(|exp| now > exp + LEEWAY_SECONDS) {
            return Err(TokenError::Expired);
        }
        if number("nbf").is_some_and(|nbf| now + LEEWAY_SECONDS < nbf) {
            return Err(TokenError::NotValidYet);
        }
        let token_audiences = audience_list(&claims);
        if !audiences.is_empty() && !token_audiences.iter().any(|a| audiences.contains(a)) {
            return Err(TokenError::Audience(token_audiences, audiences.to_vec()));
        }
        Ok(claims)
    }

    /// The JSON Web Key Set of `/openid/v1/jwks`.
    pub(crate) fn jwks(&self) -> Value {
        let (x, y) = self.public[1..].split_at(32);
        json!({ "keys": [{
            "use": "sig",
            "kty": "EC",
            "kid": self.kid,
            "crv": "P-256",
            "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        }] })
    }
}

/// A list as Go's `%q` prints it: `["a" "b"]`.
fn go_quoted(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| go_quote(i)).collect();
    format!("[{}]", quoted.join(" "))
}

/// The `aud` claim as a list (a JWT may give one audience as a string).
pub(crate) fn audience_list(claims: &Value) -> Vec<String> {
    match claims.get("aud") {
        Some(Value::String(one)) => vec![one.clone()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).map(String::from).collect(),
        _ => Vec::new(),
    }
}

/// The `OpenID` provider configuration of `/.well-known/openid-configuration`.
pub(crate) fn openid_configuration() -> Value {
    json!({
        "issuer": ISSUER,
        "jwks_uri": format!("{ISSUER}/openid/v1/jwks"),
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["ES256"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_signer() -> Signer {
        Signer::new(&KeyPair::generate().unwrap()).unwrap()
    }

    #[test]
    fn a_signed_token_verifies_and_a_changed_one_does_not() {
        let signer = new_signer();
        let claims =
            json!({ "iss": ISSUER, "aud": [ISSUER], "sub": "system:serviceaccount:ns:sa", "exp": 2000, "nbf": 1000 });
        let token = signer.sign(&claims).unwrap();
        assert_eq!(signer.verify(&token, &[ISSUER.to_string()], 1500), Ok(claims.clone()));
        assert_eq!(signer.verify(&token, &[], 2059), Ok(claims));
        assert_eq!(signer.verify(&token, &[], 2061), Err(TokenError::Expired));
        assert_eq!(signer.verify(&token, &[], 900), Err(TokenError::NotValidYet));
        let refused = signer.verify(&token, &["other".into()], 1500).unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!("token audiences [\"{ISSUER}\"] is invalid for the target audiences [\"other\"]")
        );

        let mut forged = token.clone();
        forged.insert(forged.find('.').unwrap() + 2, 'x');
        assert_eq!(signer.verify(&forged, &[], 1500), Err(TokenError::NotOurs));
        assert_eq!(new_signer().verify(&token, &[], 1500), Err(TokenError::NotOurs), "another key's token");
        assert_eq!(signer.verify("not-a-jwt", &[], 1500), Err(TokenError::NotOurs));
    }

    #[test]
    fn the_key_set_names_the_key_tokens_carry() {
        let signer = new_signer();
        let token = signer.sign(&json!({ "iss": ISSUER })).unwrap();
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap()).unwrap();
        assert_eq!(header["kid"], signer.jwks()["keys"][0]["kid"]);
        assert_eq!(header["alg"], "ES256");
    }
}
