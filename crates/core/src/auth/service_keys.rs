//! Service keys: named bearer keys with scopes, several active at once so one can be rotated
//! without downtime. Only SHA-256 digests are kept and compared (in constant time); logs carry the
//! key's name, never its value.

use super::Scope;
use sha2::{Digest, Sha256};

/// One configured key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceKey {
    /// Name (for logs and `/healthz`).
    pub name: String,
    /// What it may do.
    pub scopes: Vec<Scope>,
    digest: [u8; 32],
}

/// A declared key and the secret binding that holds its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    /// Key name.
    pub name: String,
    /// Its scopes.
    pub scopes: Vec<Scope>,
    /// Secret binding, `SERVICE_KEY_<NAME>`.
    pub secret: String,
}

/// Parses `SERVICE_KEYS`: `name:scope+scope,name:scope` (e.g. `ingest:notify:write,ops:admin`).
///
/// # Errors
/// A message naming the bad entry.
pub fn parse_declarations(spec: &str) -> Result<Vec<Declared>, String> {
    let mut out: Vec<Declared> = Vec::new();
    for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, scopes) = entry
            .split_once(':')
            .ok_or_else(|| format!("entry {entry:?} is not name:scope[+scope]"))?;
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(format!("key name {name:?} must be letters, digits, - or _"));
        }
        let scopes = scopes
            .split('+')
            .map(|s| {
                Scope::parse(s.trim()).ok_or_else(|| format!("unknown scope {s:?} for key {name}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if out.iter().any(|d| d.name == name) {
            return Err(format!("key {name} declared twice"));
        }
        out.push(Declared {
            name: name.to_owned(),
            scopes,
            secret: format!(
                "SERVICE_KEY_{}",
                name.to_ascii_uppercase().replace('-', "_")
            ),
        });
    }
    Ok(out)
}

/// The active keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceKeys {
    keys: Vec<ServiceKey>,
}

impl ServiceKeys {
    /// Keys whose secrets are set; a declared key without its secret is inactive (revoked).
    /// `legacy` (the `SERVICE_TOKEN` secret) is a key named `legacy` with every scope.
    #[must_use]
    pub fn new(
        declared: &[Declared],
        secret: impl Fn(&str) -> Option<String>,
        legacy: Option<String>,
    ) -> Self {
        let mut keys: Vec<ServiceKey> = declared
            .iter()
            .filter_map(|d| {
                Some(ServiceKey {
                    name: d.name.clone(),
                    scopes: d.scopes.clone(),
                    digest: Sha256::digest(secret(&d.secret)?.as_bytes()).into(),
                })
            })
            .collect();
        if let Some(v) = legacy {
            keys.push(ServiceKey {
                name: "legacy".into(),
                scopes: Scope::ALL.to_vec(),
                digest: Sha256::digest(v.as_bytes()).into(),
            });
        }
        ServiceKeys { keys }
    }

    /// Number of active keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when no key is active.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key whose value was presented. Every key is compared, each in constant time, so the
    /// timing says nothing about which key (or how much of one) matched.
    #[must_use]
    pub fn authenticate(&self, presented: &str) -> Option<&ServiceKey> {
        let d: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let mut found = None;
        for k in &self.keys {
            let diff = k
                .digest
                .iter()
                .zip(d.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if diff == 0 && found.is_none() {
                found = Some(k);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_parse_and_name_their_secrets() {
        let d = parse_declarations("ingest:notify:write, ops-2:admin+notify:write").unwrap();
        assert_eq!(d[0].scopes, [Scope::NotifyWrite]);
        assert_eq!(d[1].secret, "SERVICE_KEY_OPS_2");
        assert_eq!(d[1].scopes, [Scope::Admin, Scope::NotifyWrite]);
        assert!(parse_declarations("x").is_err());
        assert!(parse_declarations("x:root").unwrap_err().contains("root"));
        assert!(parse_declarations("a:admin,a:admin").is_err());
        assert!(parse_declarations("b@d:admin").is_err());
        assert!(parse_declarations("").unwrap().is_empty());
    }

    #[test]
    fn keys_rotate_and_revoke_by_secret() {
        let d = parse_declarations("old:notify:write,new:notify:write").unwrap();
        let secrets = |n: &str| match n {
            "SERVICE_KEY_OLD" => Some("old-value".to_owned()),
            "SERVICE_KEY_NEW" => Some("new-value".to_owned()),
            _ => None,
        };
        let keys = ServiceKeys::new(&d, secrets, Some("legacy-value".into()));
        assert_eq!(keys.authenticate("old-value").unwrap().name, "old");
        assert_eq!(keys.authenticate("new-value").unwrap().name, "new");
        assert_eq!(
            keys.authenticate("legacy-value").unwrap().scopes,
            Scope::ALL
        );
        assert!(keys.authenticate("old-valu").is_none());
        assert!(keys.authenticate("").is_none());
        // Removing a key's secret revokes it.
        let revoked = ServiceKeys::new(
            &d,
            |n| (n == "SERVICE_KEY_NEW").then(|| "new-value".into()),
            None,
        );
        assert!(revoked.authenticate("old-value").is_none());
        assert_eq!(revoked.len(), 1);
    }
}
