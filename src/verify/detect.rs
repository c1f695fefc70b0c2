//! The detector set: every text pattern the privacy scan flags and the
//! secret scrubber removes, in ONE table ([`DETECTORS`]).
//!
//! Two consumers share it: [`super::scan`] (flags, high recall, fails CI) and
//! [`super::redact`] (rewrites the secrets it finds before a cassette is
//! written). A detector added here is therefore caught by `verify-cassettes`
//! and scrubbed by `record` at the same time.
//!
//! Speed: a cassette can hold 50,000 events. The patterns of a surface are
//! compiled into one [`regex::bytes::RegexSet`]; a line is scanned once by
//! the set, and only the patterns the set reports are re-run to locate their
//! matches. Checks the regex language cannot express (Luhn, IBAN mod-97,
//! entropy, placeholder rejection, the path class's look-behind) run on the
//! few candidates only. Everything is compiled on first use: the scrubber
//! (every `record`) needs only the secret detectors' set, and a detector's
//! own regex is compiled the first time the set reports it.
//!
//! This module does not decide WHERE to scan (that is [`super::scan`]) nor
//! how to render or mask a finding for output (see `mask`).

use std::sync::OnceLock;

use regex::bytes::{Regex, RegexSet, RegexSetBuilder};
use serde::Serialize;

/// Broad class of a finding (the `cls` field of the JSON report). The first
/// eight are cowork-harness's classes; `secret`, `personal` and `host` are
/// reel's additions (the precise detector is in the finding's `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    Email,
    Currency,
    Domain,
    Path,
    MachineInventory,
    HostInventory,
    Unscanned,
    Binary,
    Secret,
    Personal,
    Host,
}

impl Class {
    /// The wire name (`cls`).
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Email => "email",
            Class::Currency => "currency",
            Class::Domain => "domain",
            Class::Path => "path",
            Class::MachineInventory => "machine-inventory",
            Class::HostInventory => "host-inventory",
            Class::Unscanned => "unscanned",
            Class::Binary => "binary",
            Class::Secret => "secret",
            Class::Personal => "personal",
            Class::Host => "host",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Class> {
        ALL_CLASSES.iter().copied().find(|c| c.as_str() == s)
    }

    /// Whether the matched text is shown verbatim. cowork-harness's text
    /// classes print their sample (an allow regex is reviewed against it);
    /// secrets and personal data are masked so a CI log never republishes
    /// what the gate caught.
    pub fn shows_sample(self) -> bool {
        !matches!(self, Class::Secret | Class::Personal)
    }
}

/// Every class, in wire order.
pub const ALL_CLASSES: [Class; 11] = [
    Class::Email,
    Class::Currency,
    Class::Domain,
    Class::Path,
    Class::MachineInventory,
    Class::HostInventory,
    Class::Unscanned,
    Class::Binary,
    Class::Secret,
    Class::Personal,
    Class::Host,
];

/// Which set of detectors a surface gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// Everything.
    Full,
    /// Agent capability-manifest lines (system/init, the command registry,
    /// MCP `initialize`): their catalog prose is full of product domains and
    /// example figures, so only detectors marked `on_manifest` run — every
    /// detector but the domain and currency classes (secrets, personal data
    /// with its checksums, host details run everywhere).
    Manifest,
    /// Secrets only (the record-time scrubber).
    SecretsOnly,
}

/// One pattern of the table.
pub struct Detector {
    /// Stable id (`aws-access-key-id`), the finding's `kind`.
    pub kind: &'static str,
    pub class: Class,
    /// Regex source (Rust `regex` syntax). When it has a capture group 1,
    /// that group is the sensitive VALUE (masked, scrubbed); else the whole
    /// match is.
    pub pattern: &'static str,
    /// Runs on capability-manifest lines too.
    on_manifest: bool,
    /// Characters of the value shown before the mask (a provider prefix
    /// such as `AKIA`, never more than a quarter of the value).
    reveal: usize,
    /// Post-match check on the value (checksum, placeholder rejection).
    validate: Option<fn(&str) -> bool>,
    /// The byte before the match must satisfy this (look-behind emulation).
    before: Option<fn(u8) -> bool>,
}

macro_rules! d {
    ($kind:expr, $class:ident, $pat:expr) => {
        Detector {
            kind: $kind,
            class: Class::$class,
            pattern: $pat,
            on_manifest: true,
            reveal: 0,
            validate: None,
            before: None,
        }
    };
}

/// Provider secrets are distinctive enough to need no leading word boundary
/// (a JSON-escaped `\n` before a key would defeat `\b`), so most patterns
/// start with their literal prefix.
pub static DETECTORS: &[Detector] = &[
    // ---- cowork-harness's five text classes (regexes as upstream) ----
    Detector {
        on_manifest: true,
        validate: Some(not_reserved_email),
        ..d!(
            "email",
            Email,
            r"(?i-u)[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}"
        )
    },
    Detector {
        on_manifest: false,
        ..d!(
            "currency",
            Currency,
            r"(?i-u)\$\s?[0-9][0-9,]*(?:\.[0-9]+)?\s?(?:k|m|b|bn|million|billion)?"
        )
    },
    Detector {
        on_manifest: false,
        validate: Some(not_reserved_domain),
        ..d!(
            "domain",
            Domain,
            r"(?i-u)\b[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.(?:com|io|net|org|co|app|ai|dev|xyz|vc|fund|capital|tech|cloud|health|finance|us|uk|de|fr|ca|au|me|tv|info|biz|edu|gov|mil|ch|nl|se|no|it|jp|br|nz|in|sg|kr|mx|es|pt|pl|be|at|dk|fi|ie|ru|cn|tw|hu|cz|ro|il|za|ar|cl|pe|tr)\b"
        )
    },
    Detector {
        before: Some(path_boundary),
        ..d!(
            "path",
            Path,
            r#"(?i)(?:/Users/|/home/|/root/|/private/var/|/var/folders/|/Volumes/)[^\s"')]+"#
        )
    },
    d!(
        "machine-inventory",
        MachineInventory,
        r"(?i-u)\b(?:(?:available|installed|running)\s+(?:applications?|apps|processes)|(?:applications?|apps|processes)\s+(?:currently\s+)?(?:available|installed|running))\s+on\s+(?:this|the|your)\s+(?:machine|computer|system|device|mac|host)\b\s*:?"
    ),
    // ---- secrets: AI providers ----
    Detector {
        reveal: 7,
        ..d!(
            "anthropic-api-key",
            Secret,
            r"(?-u)(sk-ant-(?:api|admin|sid)[0-9]{2}-[A-Za-z0-9_-]{32,})"
        )
    },
    Detector {
        reveal: 7,
        ..d!(
            "anthropic-oauth-token",
            Secret,
            r"(?-u)(sk-ant-o(?:at|rt)[0-9]{2}-[A-Za-z0-9_-]{32,})"
        )
    },
    Detector {
        reveal: 8,
        ..d!(
            "openai-api-key",
            Secret,
            r"(?-u)(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})"
        )
    },
    Detector {
        reveal: 3,
        ..d!(
            "huggingface-token",
            Secret,
            r"(?-u)\b(hf_[A-Za-z0-9]{34,})\b"
        )
    },
    // ---- cloud ----
    Detector {
        reveal: 4,
        ..d!(
            "aws-access-key-id",
            Secret,
            r"(?-u)((?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?:[^A-Za-z0-9]|$)"
        )
    },
    Detector {
        validate: Some(looks_random),
        ..d!(
            "aws-secret-access-key",
            Secret,
            r#"(?i-u)aws_?secret_?access_?key(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)"#
        )
    },
    Detector {
        reveal: 4,
        ..d!("gcp-api-key", Secret, r"(?-u)(AIza[0-9A-Za-z_-]{35})")
    },
    Detector {
        reveal: 7,
        ..d!(
            "gcp-oauth-client-secret",
            Secret,
            r"(?-u)(GOCSPX-[A-Za-z0-9_-]{28})"
        )
    },
    Detector {
        reveal: 5,
        ..d!(
            "gcp-oauth-access-token",
            Secret,
            r"(?-u)(ya29\.[0-9A-Za-z_-]{30,})"
        )
    },
    Detector {
        reveal: 0,
        ..d!(
            "gcp-service-account-key",
            Secret,
            r#"(?-u)(private_key_id\\?"\s*:\s*\\?"[a-f0-9]{40})"#
        )
    },
    Detector {
        reveal: 0,
        ..d!(
            "azure-storage-key",
            Secret,
            r"(?i-u)AccountKey=([A-Za-z0-9+/]{86}==)"
        )
    },
    Detector {
        reveal: 0,
        ..d!(
            "azure-sas-token",
            Secret,
            r"(?-u)[?&]sv=20[0-9]{2}-[0-9]{2}-[0-9]{2}&[^\s\x22']*?sig=([A-Za-z0-9%+/=]{30,})"
        )
    },
    Detector {
        reveal: 3,
        ..d!(
            "azure-ad-client-secret",
            Secret,
            r"(?-u)(?:^|[^A-Za-z0-9_~.-])([A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})(?:[^A-Za-z0-9_~.-]|$)"
        )
    },
    Detector {
        reveal: 7,
        ..d!(
            "digitalocean-token",
            Secret,
            r"(?-u)(do[opr]_v1_[a-f0-9]{64})"
        )
    },
    Detector {
        reveal: 4,
        ..d!("supabase-token", Secret, r"(?-u)(sbp_[a-f0-9]{40})")
    },
    Detector {
        reveal: 4,
        ..d!(
            "hashicorp-vault-token",
            Secret,
            r"(?-u)\b(hvs\.[A-Za-z0-9_-]{24,})"
        )
    },
    Detector {
        reveal: 4,
        ..d!("databricks-token", Secret, r"(?-u)\b(dapi[a-f0-9]{32})\b")
    },
    // ---- VCS ----
    Detector {
        reveal: 4,
        ..d!("github-token", Secret, r"(?-u)(gh[pousr]_[A-Za-z0-9]{36,})")
    },
    Detector {
        reveal: 11,
        ..d!(
            "github-fine-grained-token",
            Secret,
            r"(?-u)(github_pat_[A-Za-z0-9_]{50,})"
        )
    },
    Detector {
        reveal: 6,
        ..d!(
            "gitlab-token",
            Secret,
            r"(?-u)(gl(?:pat|dt|rt|ptt|cbt|oas|ft)-[A-Za-z0-9_-]{20,})"
        )
    },
    Detector {
        reveal: 6,
        ..d!(
            "atlassian-api-token",
            Secret,
            r"(?-u)(ATATT3[A-Za-z0-9_=-]{50,})"
        )
    },
    // ---- chat / messaging ----
    Detector {
        reveal: 5,
        ..d!(
            "slack-token",
            Secret,
            r"(?-u)(xox[baprse]-[0-9A-Za-z-]{10,})"
        )
    },
    Detector {
        reveal: 5,
        ..d!(
            "slack-app-token",
            Secret,
            r"(?-u)(xapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-f0-9]{20,})"
        )
    },
    Detector {
        reveal: 0,
        ..d!(
            "slack-webhook",
            Secret,
            r"(?-u)hooks\.slack\.com/(?:services|workflows|triggers)/(T[A-Z0-9]+/[A-Z0-9]+/[A-Za-z0-9]{16,})"
        )
    },
    Detector {
        reveal: 0,
        ..d!(
            "discord-webhook",
            Secret,
            r"(?-u)discord(?:app)?\.com/api/webhooks/([0-9]{15,}/[A-Za-z0-9_-]{30,})"
        )
    },
    Detector {
        reveal: 0,
        ..d!(
            "telegram-bot-token",
            Secret,
            r"(?-u)(?:^|[^0-9])([0-9]{8,10}:AA[A-Za-z0-9_-]{33})(?:[^A-Za-z0-9_-]|$)"
        )
    },
    Detector {
        reveal: 3,
        ..d!(
            "sendgrid-api-key",
            Secret,
            r"(?-u)(SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})"
        )
    },
    // ---- payments / commerce ----
    Detector {
        reveal: 8,
        ..d!(
            "stripe-secret-key",
            Secret,
            r"(?-u)((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})"
        )
    },
    Detector {
        reveal: 6,
        ..d!(
            "stripe-webhook-secret",
            Secret,
            r"(?-u)(whsec_[A-Za-z0-9]{32,})"
        )
    },
    Detector {
        reveal: 2,
        ..d!("twilio-account-sid", Secret, r"(?-u)\b(AC[a-f0-9]{32})\b")
    },
    Detector {
        reveal: 2,
        ..d!("twilio-api-key", Secret, r"(?-u)\b(SK[a-f0-9]{32})\b")
    },
    Detector {
        reveal: 7,
        ..d!(
            "square-token",
            Secret,
            r"(?-u)(sq0(?:atp|csp)-[A-Za-z0-9_-]{22,})"
        )
    },
    Detector {
        reveal: 6,
        ..d!(
            "shopify-token",
            Secret,
            r"(?-u)(shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32})"
        )
    },
    // ---- package registries / dev tools ----
    Detector {
        reveal: 4,
        ..d!("npm-token", Secret, r"(?-u)(npm_[A-Za-z0-9]{36})")
    },
    Detector {
        reveal: 5,
        ..d!(
            "pypi-token",
            Secret,
            r"(?-u)(pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,})"
        )
    },
    Detector {
        reveal: 5,
        ..d!(
            "postman-api-key",
            Secret,
            r"(?-u)(PMAK-[a-f0-9]{24}-[a-f0-9]{34})"
        )
    },
    Detector {
        reveal: 8,
        ..d!("linear-api-key", Secret, r"(?-u)(lin_api_[A-Za-z0-9]{40})")
    },
    Detector {
        reveal: 4,
        ..d!(
            "notion-token",
            Secret,
            r"(?-u)\b((?:secret_|ntn_)[A-Za-z0-9]{43,46})\b"
        )
    },
    Detector {
        reveal: 5,
        ..d!(
            "grafana-token",
            Secret,
            r"(?-u)(glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})"
        )
    },
    Detector {
        reveal: 0,
        ..d!(
            "sentry-dsn",
            Secret,
            r"(?-u)https?://([a-f0-9]{32})@[a-z0-9.-]*sentry\.io"
        )
    },
    Detector {
        reveal: 15,
        ..d!(
            "age-secret-key",
            Secret,
            r"(?-u)(AGE-SECRET-KEY-1[0-9A-Z]{58})"
        )
    },
    // ---- generic credential shapes ----
    Detector {
        reveal: 3,
        ..d!(
            "jwt",
            Secret,
            r"(?-u)(eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})"
        )
    },
    Detector {
        reveal: 0,
        ..d!(
            "private-key",
            Secret,
            r"(?-u)(-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)"
        )
    },
    Detector {
        reveal: 0,
        ..d!(
            "putty-private-key",
            Secret,
            r"(?-u)(PuTTY-User-Key-File-[0-9]+:)"
        )
    },
    Detector {
        validate: Some(not_placeholder_token),
        ..d!(
            "bearer-token",
            Secret,
            r"(?i-u)\bbearer\s+([A-Za-z0-9._~+/=-]{16,})"
        )
    },
    Detector {
        validate: Some(not_placeholder_token),
        ..d!(
            "basic-auth-header",
            Secret,
            r"(?i-u)\bauthorization(?:\\?[\x22'])?\s*:\s*(?:\\?[\x22'])?basic\s+([A-Za-z0-9+/]{12,}=*)"
        )
    },
    Detector {
        validate: Some(not_placeholder_secret),
        ..d!(
            "url-credentials",
            Secret,
            r"(?i-u)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@\x22'\\]{1,64}:([^\s:/@\x22'\\]{3,128})@[a-z0-9.-]+"
        )
    },
    Detector {
        validate: Some(not_placeholder_secret),
        ..d!(
            "password-assignment",
            Secret,
            r"(?i-u)\b[a-z0-9_.-]*(?:password|passwd|passphrase|pwd|client_secret|secret_key|api_secret)(?:\\?[\x22'])?\s*[:=]\s*(?:\\?[\x22'])?([^\s\x22'\\,;}&]{6,128})"
        )
    },
    Detector {
        validate: Some(high_entropy_secret),
        ..d!(
            "high-entropy-secret",
            Secret,
            r"(?i-u)\b[a-z0-9_-]*(?:api_?key|apikey|token|secret|credential|access_?key)(?:\\?[\x22'])?\s*[:=]\s*(?:\\?[\x22'])?([A-Za-z0-9+/_=.-]{20,})"
        )
    },
    // ---- personal data ----
    Detector {
        on_manifest: true,
        validate: Some(phone_digits_ok),
        ..d!(
            "phone-international",
            Personal,
            r"(?-u)(?:^|[^0-9A-Za-z+])(\+[1-9][0-9]{0,2}[ .-]?(?:\([0-9]{1,4}\)[ .-]?)?[0-9]{1,4}(?:[ .-]?[0-9]{2,4}){2,4})(?:[^0-9]|$)"
        )
    },
    Detector {
        on_manifest: true,
        ..d!(
            "phone-north-america",
            Personal,
            r"(?-u)(?:^|[^0-9.\-+])((?:\([2-9][0-9]{2}\)\s?|[2-9][0-9]{2}[.-])[0-9]{3}[.-][0-9]{4})(?:[^0-9]|$)"
        )
    },
    Detector {
        on_manifest: true,
        validate: Some(card_ok),
        ..d!(
            "payment-card",
            Personal,
            r"(?-u)(?:^|[^0-9.\-])((?:[2-6][0-9]{3})(?:[ -]?[0-9]{4}){2}[ -]?[0-9]{1,7}|3[47][0-9]{2}[ -]?[0-9]{6}[ -]?[0-9]{5})(?:[^0-9.\-]|[.\-](?:[^0-9]|$)|$)"
        )
    },
    Detector {
        on_manifest: true,
        validate: Some(iban_ok),
        ..d!(
            "iban",
            Personal,
            r"(?-u)\b([A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?)\b"
        )
    },
    Detector {
        on_manifest: true,
        validate: Some(ssn_ok),
        ..d!(
            "us-ssn",
            Personal,
            r"(?-u)(?:^|[^0-9-])([0-9]{3}-[0-9]{2}-[0-9]{4})(?:[^0-9-]|$)"
        )
    },
    Detector {
        on_manifest: true,
        ..d!(
            "uk-national-insurance-number",
            Personal,
            r"(?-u)\b([A-CEGHJ-PRSTW-Z][A-CEGHJ-NPRSTW-Z] ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D])\b"
        )
    },
    Detector {
        on_manifest: true,
        validate: Some(sin_ok),
        ..d!(
            "canada-sin",
            Personal,
            r"(?-u)(?:^|[^0-9-])([1-79][0-9]{2}[ -][0-9]{3}[ -][0-9]{3})(?:[^0-9-]|$)"
        )
    },
    Detector {
        on_manifest: false,
        ..d!(
            "currency-symbol-amount",
            Currency,
            r"(?:€|£|¥|₹|₩|₽|₺|₪|₫|฿|₴|₦|₱|CHF|R\$|zł)\s?[0-9][0-9,. ']*[0-9](?:\s?(?i:k|m|bn|million|billion|mio|mrd))?"
        )
    },
    Detector {
        on_manifest: false,
        ..d!(
            "currency-amount-suffix",
            Currency,
            r"(?-u)\b[0-9][0-9,. ']*[0-9]?\s?(?:€|£|USD|EUR|GBP|JPY|CHF|CAD|AUD|NZD|CNY|INR|SEK|NOK|DKK|PLN|BRL|MXN|ZAR|SGD|HKD|KRW|ILS|TRY|RUB)\b"
        )
    },
    Detector {
        on_manifest: false,
        ..d!(
            "currency-code-amount",
            Currency,
            r"(?-u)\b(?:USD|EUR|GBP|JPY|CHF|CAD|AUD|NZD|CNY|INR|SEK|NOK|DKK|PLN|BRL|MXN|ZAR|SGD|HKD|KRW|ILS|TRY|RUB)\s?[0-9][0-9,.]*[0-9]"
        )
    },
    // ---- host details ----
    Detector {
        validate: Some(private_ip_ok),
        ..d!(
            "private-ip",
            Host,
            r"(?-u)(?:^|[^0-9.vV])((?:10|127|192\.168|172\.(?:1[6-9]|2[0-9]|3[01])|169\.254)(?:\.[0-9]{1,3}){2,3})(?:[^0-9.+\-]|\.(?:[^0-9]|$)|-(?:[^A-Za-z]|$)|$)"
        )
    },
    // IPv6 unique-local (fc00::/7) and link-local (fe80::/10), with an
    // optional zone (`%eth0`); the address must parse (so `fd12:30:45`, a
    // time after a hex word, is not one).
    Detector {
        validate: Some(private_ipv6_ok),
        ..d!(
            "private-ipv6",
            Host,
            r"(?i-u)(?:^|[^0-9a-z:._%-])((?:f[cd][0-9a-f]{2}|fe[89ab][0-9a-f])(?::[0-9a-f]{0,4}){1,7}(?:%[0-9a-z_.-]{1,32})?)(?:[^0-9a-z:_%-]|$)"
        )
    },
    Detector {
        validate: Some(mac_ok),
        ..d!(
            "mac-address",
            Host,
            r"(?i-u)(?:^|[^0-9a-f:-])([0-9a-f]{2}(?:([:-])[0-9a-f]{2})(?:[:-][0-9a-f]{2}){4})(?:[^0-9a-f:-]|$)"
        )
    },
    d!(
        "local-hostname",
        Host,
        r"(?i-u)\b([a-z0-9][a-z0-9-]{0,62}(?:\.[a-z0-9][a-z0-9-]{0,62})*\.(?:local|lan|internal|intranet|corp|localdomain|home\.arpa))(?:[^A-Za-z0-9_.-]|\.(?:[^A-Za-z0-9]|$)|$)"
    ),
    d!(
        "windows-hostname",
        Host,
        r"(?-u)\b((?:DESKTOP|LAPTOP|WIN)-[A-Z0-9]{7,15})\b"
    ),
    d!(
        "mac-hostname",
        Host,
        r"(?-u)\b([A-Z][A-Za-z]+s-(?:MacBook|Mac|iMac|MBP|Mac-mini)(?:-(?:Pro|Air|mini|Studio))?(?:-[0-9]+)?)\b"
    ),
    Detector {
        validate: Some(windows_home_ok),
        ..d!(
            "windows-home-path",
            Host,
            r"(?i-u)\b([a-z]:(?:\\\\|\\|/)(?:Users|Documents and Settings)(?:\\\\|\\|/)[a-z0-9._ -]{1,64})"
        )
    },
    d!(
        "home-path-url",
        Host,
        r"(?i-u)file://(/(?:Users|home)/[^\s\x22')\\/]+)"
    ),
];

/// The compiled table: one [`RegexSet`] per scan surface and one [`Regex`]
/// per detector, each compiled on first use and shared by the scanner and
/// the scrubber.
pub struct DetectorSet {
    /// Every detector (the `Full` and `Manifest` surfaces).
    all: OnceLock<SurfaceSet>,
    /// The secret detectors only (the scrubber's surface): a third of the
    /// patterns, so it compiles and warms up several times faster.
    secrets: OnceLock<SurfaceSet>,
    /// `regexes[i]` locates the matches of `DETECTORS[i]`.
    regexes: Vec<OnceLock<Regex>>,
}

/// A compiled set over some detectors of the table.
struct SurfaceSet {
    set: RegexSet,
    /// `detectors[k]` is the table index of the set's pattern `k`
    /// (ascending, so hits come out in table order).
    detectors: Vec<usize>,
}

/// Lazy-DFA cache capacity of a set. The regex crate's default (2 MiB) is too
/// small for ~70 patterns with long counted repetitions: the lazy DFA keeps
/// clearing its cache, gives up, and every line is scanned by the NFA
/// simulation instead (~1 MB/s: 60-100 ms for one 30 KB cassette, seconds for
/// all example cassettes). Measured over the committed cassettes (330 KB of
/// text), the full set stops thrashing at 16 MiB and the secret set fits in
/// 2 MiB; both get twice that. The memory is only allocated as states are
/// built.
const ALL_DFA_CAPACITY: usize = 32 << 20;
const SECRETS_DFA_CAPACITY: usize = 8 << 20;

impl SurfaceSet {
    fn compile(keep: impl Fn(&Detector) -> bool, dfa_capacity: usize) -> SurfaceSet {
        let detectors: Vec<usize> = (0..DETECTORS.len())
            .filter(|&i| keep(&DETECTORS[i]))
            .collect();
        // The table is a compile-time constant checked by a unit test
        // (`every_pattern_compiles_and_kinds_are_unique`), so a failure here is a programming
        // error, not bad input.
        let set = RegexSetBuilder::new(detectors.iter().map(|&i| DETECTORS[i].pattern))
            .dfa_size_limit(dfa_capacity)
            .build()
            .expect("detector table compiles");
        SurfaceSet { set, detectors }
    }
}

/// One match of one detector.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    pub detector: usize,
    /// Byte range of the whole reported sample in the scanned text.
    pub start: usize,
    pub end: usize,
    /// Byte range of the sensitive value (⊆ sample).
    pub value_start: usize,
    pub value_end: usize,
}

impl Hit {
    pub fn detector(&self) -> &'static Detector {
        &DETECTORS[self.detector]
    }
}

impl DetectorSet {
    /// The process-wide table. Cheap: the sets and regexes inside are
    /// compiled on first use.
    pub fn global() -> &'static DetectorSet {
        static SET: OnceLock<DetectorSet> = OnceLock::new();
        SET.get_or_init(|| DetectorSet {
            all: OnceLock::new(),
            secrets: OnceLock::new(),
            regexes: DETECTORS.iter().map(|_| OnceLock::new()).collect(),
        })
    }

    fn surface_set(&self, surface: Surface) -> &SurfaceSet {
        match surface {
            // Manifest lines are few; the full set filtered by `on_manifest`
            // is cheaper than compiling a third set.
            Surface::Full | Surface::Manifest => self
                .all
                .get_or_init(|| SurfaceSet::compile(|_| true, ALL_DFA_CAPACITY)),
            Surface::SecretsOnly => self.secrets.get_or_init(|| {
                SurfaceSet::compile(|d| d.class == Class::Secret, SECRETS_DFA_CAPACITY)
            }),
        }
    }

    fn regex(&self, idx: usize) -> &Regex {
        // Checked by the `every_pattern_compiles_and_kinds_are_unique` unit test.
        self.regexes[idx]
            .get_or_init(|| Regex::new(DETECTORS[idx].pattern).expect("detector table compiles"))
    }

    /// Calls `on_hit` for every validated match in `text` of the detectors
    /// enabled on `surface`, in table order then text order.
    pub fn find(&self, text: &str, surface: Surface, mut on_hit: impl FnMut(Hit)) {
        if text.is_empty() {
            return;
        }
        let surface_set = self.surface_set(surface);
        let matched = surface_set.set.matches(text.as_bytes());
        if !matched.matched_any() {
            return;
        }
        for k in matched.iter() {
            let idx = surface_set.detectors[k];
            let det = &DETECTORS[idx];
            let enabled = match surface {
                Surface::Full => true,
                Surface::Manifest => det.on_manifest,
                Surface::SecretsOnly => det.class == Class::Secret,
            };
            if enabled {
                self.find_one(idx, text, &mut on_hit);
            }
        }
    }

    fn find_one(&self, idx: usize, text: &str, on_hit: &mut impl FnMut(Hit)) {
        let det = &DETECTORS[idx];
        let re = self.regex(idx);
        let bytes = text.as_bytes();
        let mut at = 0;
        while at <= text.len() {
            let Some(caps) = re.captures_at(bytes, at) else {
                break;
            };
            // Group 0 always exists on a match.
            let whole = caps.get(0).expect("group 0");
            let (vs, ve) = caps
                .get(1)
                .map_or((whole.start(), whole.end()), |g| (g.start(), g.end()));
            // Patterns that consume a boundary character report the value
            // group as the sample; the rest report the whole match.
            let (ss, se) = if caps.get(1).is_some() && det.class != Class::Secret {
                (vs, ve)
            } else if caps.get(1).is_some() {
                trim_to_sample(det, whole.start(), whole.end(), vs, ve, bytes)
            } else {
                (whole.start(), whole.end())
            };
            let boundary_ok = det.before.is_none_or(|ok| ss == 0 || ok(bytes[ss - 1]));
            let valid = boundary_ok
                && det
                    .validate
                    .is_none_or(|v| v(text.get(vs..ve).unwrap_or_default()));
            if valid {
                on_hit(Hit {
                    detector: idx,
                    start: ss,
                    end: se,
                    value_start: vs,
                    value_end: ve,
                });
                // Continue after the value (a consumed trailing boundary
                // char may start the next match).
                at = next_char(text, ve.max(ss + 1));
            } else {
                // Rejected: retry one character later so a valid match that
                // starts inside the rejected one is still found (the
                // look-behind semantics of cowork-harness's path class).
                at = next_char(text, whole.start() + 1);
            }
        }
    }
}

/// For secret detectors with a value group, the reported sample is the
/// whole match minus boundary characters consumed outside the key context
/// (e.g. the `(?:^|[^0-9])` prefix of telegram tokens).
fn trim_to_sample(
    det: &Detector,
    ws: usize,
    we: usize,
    vs: usize,
    ve: usize,
    _bytes: &[u8],
) -> (usize, usize) {
    // Patterns whose context is meaningful (password=…, Bearer …) keep it;
    // those whose only context is a boundary character report the value.
    let keeps_context = matches!(
        det.kind,
        "password-assignment"
            | "bearer-token"
            | "basic-auth-header"
            | "url-credentials"
            | "aws-secret-access-key"
            | "high-entropy-secret"
            | "azure-storage-key"
            | "slack-webhook"
            | "discord-webhook"
            | "sentry-dsn"
            | "gcp-service-account-key"
    );
    if keeps_context {
        (ws, ve.max(vs).min(we))
    } else {
        (vs, ve)
    }
}

fn next_char(text: &str, mut i: usize) -> usize {
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    if i > text.len() { text.len() + 1 } else { i }
}

/// Masks `value` for display: at most `reveal` leading characters (never
/// more than a quarter of the value) stay, the rest become `•`, capped so a
/// long key does not flood the log; the length is stated.
pub fn mask_value(value: &str, reveal: usize) -> String {
    let n = value.chars().count();
    let shown = reveal.min(n / 4);
    let head: String = value.chars().take(shown).collect();
    format!("{head}{}({n} chars)", "•".repeat((n - shown).clamp(1, 8)))
}

/// The display form of a hit's sample: verbatim for the classes that show
/// samples, else the sample with its value part masked.
pub fn display_sample(text: &str, hit: &Hit) -> String {
    let det = hit.detector();
    let slice = |a: usize, b: usize| String::from_utf8_lossy(&text.as_bytes()[a..b]).into_owned();
    if det.class.shows_sample() {
        return slice(hit.start, hit.end);
    }
    let pre = slice(hit.start, hit.value_start.max(hit.start));
    let value = slice(hit.value_start, hit.value_end);
    let post = slice(hit.value_end.min(hit.end), hit.end);
    format!("{pre}{}{post}", mask_value(&value, det.reveal))
}

// ---------------------------------------------------------------- checks

fn path_boundary(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'(' | b'=' | b':')
}

/// RFC 2606 / 6761 reserved names never identify anyone.
fn reserved_host(host: &str) -> bool {
    let h = host.to_ascii_lowercase();
    let h = h.trim_end_matches('.');
    ["example.com", "example.net", "example.org"]
        .iter()
        .any(|r| h == *r || h.ends_with(&format!(".{r}")))
        || [".example", ".test", ".invalid", ".localhost"]
            .iter()
            .any(|s| h.ends_with(s))
}

/// XML namespace and schema hosts every Office document and SVG names:
/// identifiers, never a machine or a person (reel's departure from
/// cowork-harness, which reports them as domains).
const NAMESPACE_HOSTS: &[&str] = &[
    "openxmlformats.org",
    "schemas.microsoft.com",
    "www.w3.org",
    "w3.org",
    "purl.org",
    "ns.adobe.com",
    "schemas.xmlsoap.org",
    "docs.oasis-open.org",
    "openoffice.org",
    "xml.org",
];

fn namespace_host(host: &str) -> bool {
    let h = host.to_ascii_lowercase();
    let h = h.trim_end_matches('.');
    NAMESPACE_HOSTS
        .iter()
        .any(|n| h == *n || h.ends_with(&format!(".{n}")))
}

fn not_reserved_domain(d: &str) -> bool {
    !reserved_host(d) && !namespace_host(d)
}

fn not_reserved_email(e: &str) -> bool {
    e.rsplit_once('@')
        .is_none_or(|(_, host)| !reserved_host(host))
}

fn is_placeholder(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    let first = v.as_bytes().first().copied().unwrap_or(b' ');
    if matches!(first, b'$' | b'<' | b'{' | b'%' | b'*' | b'[' | b'(' | b'@') {
        return true;
    }
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "secret",
        "changeme",
        "placeholder",
        "example",
        "redacted",
        "your_",
        "your-",
        "yourtoken",
        "xxxx",
        "****",
        "....",
        "dummy",
        "sample",
        "token_here",
        "null",
        "undefined",
        "none",
        "true",
        "false",
        "process.env",
        "os.environ",
        "getenv",
        "env.",
        "settings.",
        "config.",
        "xxxxxx",
    ];
    if WORDS.iter().any(|w| lower.contains(w)) {
        return true;
    }
    // SCREAMING_CASE identifiers are variable names, not values.
    if v.bytes()
        .all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit())
        && v.bytes().any(|b| b == b'_')
    {
        return true;
    }
    // A run of one repeated character is a mask.
    let mut chars = v.chars();
    let c0 = chars.next();
    c0.is_some() && chars.all(|c| Some(c) == c0)
}

fn not_placeholder_secret(v: &str) -> bool {
    if is_placeholder(v) {
        return false;
    }
    // A lowercase file name (`password: required.md`, `secret_key:
    // keys/dev.pem`) names where a credential lives, not the credential.
    if let Some((stem, ext)) = v.rsplit_once('.')
        && (1..=4).contains(&ext.len())
        && ext.bytes().all(|b| b.is_ascii_lowercase())
        && !stem.is_empty()
        && stem
            .bytes()
            .all(|b| b.is_ascii_lowercase() || matches!(b, b'/' | b'-' | b'_' | b'.'))
    {
        return false;
    }
    // A value that is one plain lowercase word reads as prose ("password:
    // required"), not a credential.
    let has_digit = v.bytes().any(|b| b.is_ascii_digit());
    let has_upper = v.bytes().any(|b| b.is_ascii_uppercase());
    let has_lower = v.bytes().any(|b| b.is_ascii_lowercase());
    let has_symbol = v.bytes().any(|b| !b.is_ascii_alphanumeric());
    has_digit || has_symbol || (has_upper && has_lower)
}

fn not_placeholder_token(v: &str) -> bool {
    !is_placeholder(v)
        && v.bytes().any(|b| b.is_ascii_digit())
        && v.bytes().any(|b| b.is_ascii_alphabetic())
}

/// Shannon entropy in bits per character.
pub fn entropy(v: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in v.bytes() {
        counts[b as usize] += 1;
    }
    let n = v.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

fn is_hex(v: &str) -> bool {
    v.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_uuid(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn looks_random(v: &str) -> bool {
    !is_placeholder(v) && entropy(v) >= 3.5
}

/// A keyed value (`token = …`) that looks machine-generated: long, high
/// entropy, mixed character classes, and not a digest or an id (hex runs and
/// uuids are what build tools print next to the word "key" all day).
fn high_entropy_secret(v: &str) -> bool {
    if is_placeholder(v) || is_hex(v) || is_uuid(v) {
        return false;
    }
    if v.contains('.')
        && v.split('.')
            .all(|p| p.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_'))
    {
        return false; // a dotted identifier (`config.auth.token`)
    }
    let classes = [
        v.bytes().any(|b| b.is_ascii_lowercase()),
        v.bytes().any(|b| b.is_ascii_uppercase()),
        v.bytes().any(|b| b.is_ascii_digit()),
    ];
    classes.iter().filter(|&&c| c).count() >= 2 && entropy(v) >= 3.8
}

fn digits(v: &str) -> Vec<u8> {
    v.bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect()
}

fn phone_digits_ok(v: &str) -> bool {
    let n = digits(v).len();
    (8..=15).contains(&n)
}

/// Luhn checksum over a digit string.
pub fn luhn(ds: &[u8]) -> bool {
    let sum: u32 = ds
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = d as u32;
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn card_ok(v: &str) -> bool {
    let ds = digits(v);
    let n = ds.len();
    let prefix2 = ds.first().map_or(0, |&a| {
        a as u32 * 10 + ds.get(1).copied().unwrap_or(0) as u32
    });
    let brand_len_ok = match ds.first() {
        Some(4) => n == 13 || n == 16 || n == 19,
        Some(5) => (51..=55).contains(&prefix2) && n == 16,
        Some(2) => (22..=27).contains(&prefix2) && n == 16,
        Some(3) => {
            (prefix2 == 34 || prefix2 == 37) && n == 15
                || (prefix2 == 35 || prefix2 == 36 || prefix2 == 38) && (14..=19).contains(&n)
        }
        Some(6) => (16..=19).contains(&n),
        _ => false,
    };
    // An unseparated 13-19 digit run with a valid Luhn digit is common in
    // ids; require the separators a human writes, or a 15/16 digit run.
    let separated = v.contains(' ') || v.contains('-');
    brand_len_ok && (separated || n == 15 || n == 16) && luhn(&ds)
}

/// IBAN: country length table (the common SEPA + a few) and ISO 7064 mod 97.
pub fn iban_ok(v: &str) -> bool {
    let s: String = v.chars().filter(|c| !c.is_whitespace()).collect();
    let b = s.as_bytes();
    if b.len() < 15 || b.len() > 34 {
        return false;
    }
    const LENS: &[(&str, usize)] = &[
        ("AD", 24),
        ("AT", 20),
        ("BE", 16),
        ("BG", 22),
        ("CH", 21),
        ("CY", 28),
        ("CZ", 24),
        ("DE", 22),
        ("DK", 18),
        ("EE", 20),
        ("ES", 24),
        ("FI", 18),
        ("FR", 27),
        ("GB", 22),
        ("GR", 27),
        ("HR", 21),
        ("HU", 28),
        ("IE", 22),
        ("IL", 23),
        ("IS", 26),
        ("IT", 27),
        ("LI", 21),
        ("LT", 20),
        ("LU", 20),
        ("LV", 21),
        ("MC", 27),
        ("MT", 31),
        ("NL", 18),
        ("NO", 15),
        ("PL", 28),
        ("PT", 25),
        ("RO", 24),
        ("SA", 24),
        ("SE", 24),
        ("SI", 19),
        ("SK", 24),
        ("TR", 26),
        ("AE", 23),
        ("BR", 29),
        ("QA", 29),
        ("UA", 29),
    ];
    let country = &s[..2];
    if let Some((_, len)) = LENS.iter().find(|(c, _)| *c == country)
        && *len != b.len()
    {
        return false;
    }
    let rearranged = s[4..].bytes().chain(s[..4].bytes());
    let mut rem: u32 = 0;
    for c in rearranged {
        let val = match c {
            b'0'..=b'9' => (c - b'0') as u32,
            b'A'..=b'Z' => (c - b'A') as u32 + 10,
            _ => return false,
        };
        rem = if val >= 10 {
            (rem * 100 + val) % 97
        } else {
            (rem * 10 + val) % 97
        };
    }
    rem == 1
}

fn ssn_ok(v: &str) -> bool {
    let ds = digits(v);
    let area = ds[0] as u32 * 100 + ds[1] as u32 * 10 + ds[2] as u32;
    let group = ds[3] as u32 * 10 + ds[4] as u32;
    let serial: u32 = ds[5..].iter().fold(0, |a, &d| a * 10 + d as u32);
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
}

fn sin_ok(v: &str) -> bool {
    luhn(&digits(v))
}

fn private_ip_ok(v: &str) -> bool {
    let octets: Vec<&str> = v.split('.').collect();
    octets.len() == 4
        && octets.iter().all(|o| {
            o.parse::<u16>().is_ok_and(|n| n <= 255) && !(o.len() > 1 && o.starts_with('0'))
        })
        && !v.starts_with("127.") // loopback names no host
}

fn private_ipv6_ok(v: &str) -> bool {
    let addr = v.split('%').next().unwrap_or(v);
    addr.parse::<std::net::Ipv6Addr>().is_ok_and(|a| {
        let first = a.segments()[0];
        first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfe80
    })
}

fn mac_ok(v: &str) -> bool {
    let lower = v.to_ascii_lowercase().replace('-', ":");
    let sep_consistent = !(v.contains(':') && v.contains('-'));
    let hexish: String = lower.chars().filter(|c| *c != ':').collect();
    sep_consistent
        && lower != "00:00:00:00:00:00"
        && lower != "ff:ff:ff:ff:ff:ff"
        && !hexish.bytes().all(|b| b.is_ascii_digit()) // 12:30:45:… reads as a time
}

fn windows_home_ok(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    let user = lower.rsplit(['\\', '/']).next().unwrap_or("").trim();
    !user.is_empty()
        && !matches!(
            user,
            "public" | "default" | "all users" | "<user>" | "user" | "username" | "%username%"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<&'static str> {
        let mut out = vec![];
        DetectorSet::global().find(text, Surface::Full, |h| out.push(h.detector().kind));
        out
    }

    #[test]
    fn every_pattern_compiles_and_kinds_are_unique() {
        // Everything is compiled lazily at run time; compile it all here so
        // a broken pattern fails this test rather than a user's run.
        let set = DetectorSet::global();
        assert_eq!(set.regexes.len(), DETECTORS.len());
        for i in 0..DETECTORS.len() {
            set.regex(i);
        }
        let all = set.surface_set(Surface::Full);
        assert_eq!(all.detectors.len(), DETECTORS.len());
        let secrets = set.surface_set(Surface::SecretsOnly);
        assert!(
            secrets
                .detectors
                .iter()
                .all(|&i| DETECTORS[i].class == Class::Secret)
        );
        assert_eq!(
            secrets.detectors.len(),
            DETECTORS
                .iter()
                .filter(|d| d.class == Class::Secret)
                .count()
        );
        let mut ks: Vec<_> = DETECTORS.iter().map(|d| d.kind).collect();
        ks.sort();
        ks.dedup();
        assert_eq!(ks.len(), DETECTORS.len());
    }

    #[test]
    fn the_secret_surface_finds_what_the_full_surface_finds() {
        // The scrubber scans with its own (smaller) set; it must report
        // exactly the secret hits of the full set, in the same order.
        let text = concat!(
            "key ghp_abcdefghijklmnopqrstuvwxyz0123456789 and AKIAQWERTYUIOPASDFGH, ",
            "mail bob@acme.io $ 1,200 from /home/alice on 10.1.2.3, ",
            "password=Hunter2xyz! Authorization: Bearer abcDEF123456ghiJKL789 ",
            "xoxb-1234567890-abcdefghij sk_live_abcdefghijklmnop1234 ",
            "-----BEGIN RSA PRIVATE KEY----- card 4111 1111 1111 1111"
        );
        let collect = |surface| {
            let mut out = vec![];
            DetectorSet::global().find(text, surface, |h| {
                if h.detector().class == Class::Secret {
                    out.push((h.detector().kind, h.value_start, h.value_end));
                }
            });
            out
        };
        let secrets = collect(Surface::SecretsOnly);
        assert!(secrets.len() >= 6, "{secrets:?}");
        assert_eq!(secrets, collect(Surface::Full));
    }

    #[test]
    fn path_class_honours_the_lookbehind() {
        assert_eq!(kinds("x/home/a"), Vec::<&str>::new());
        assert_eq!(kinds("cd /home/alice"), vec!["path"]);
        assert_eq!(kinds("x/home/a:/home/b"), vec!["path"]);
    }

    #[test]
    fn private_ipv6_ranges_only() {
        for hit in [
            "fd12:3456:789a:1::1",
            "fc00::1",
            "fe80::1ff:fe23:4567:890a",
            "at fe80::1%eth0 now",
            "[fd00::1]:8080",
            "FEBF::1",
        ] {
            assert_eq!(kinds(hit), vec!["private-ipv6"], "{hit}");
        }
        for miss in [
            "2001:db8::1",
            "2606:4700:4700::1111",
            "::1",
            "fec0::1",
            "std::vector",
            "fd12:30:45",
            "fd:12:34:56",
            "deadbeeffe80::1",
        ] {
            assert!(!kinds(miss).contains(&"private-ipv6"), "{miss}");
        }
    }

    #[test]
    fn version_strings_are_not_private_ips() {
        assert_eq!(kinds("host 10.0.0.1 up"), vec!["private-ip"]);
        assert_eq!(
            kinds("range 10.0.0.1-10.0.0.9"),
            vec!["private-ip", "private-ip"]
        );
        for miss in [
            "10.0.0.1-rc",
            "v10.0.0.1",
            "192.168.0.1-beta.2",
            "10.0.0.1+build",
        ] {
            assert!(kinds(miss).is_empty(), "{miss}: {:?}", kinds(miss));
        }
    }

    #[test]
    fn checksums() {
        assert!(luhn(&digits("4111111111111111")));
        assert!(!luhn(&digits("4111111111111112")));
        assert!(iban_ok("GB82 WEST 1234 5698 7654 32"));
        assert!(!iban_ok("GB82 WEST 1234 5698 7654 33"));
    }

    #[test]
    fn masks_never_show_more_than_a_quarter() {
        let m = mask_value("AKIAZZZZZZZZZZZZZZZZ", 4);
        assert!(m.starts_with("AKIA") && m.contains("(20 chars)"), "{m}");
        assert!(!m.contains("ZZZZ"));
    }
}
