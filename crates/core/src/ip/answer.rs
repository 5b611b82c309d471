//! What every IP source answers, and the one trait they share: the mmdb reader ([`super::IpDb`]),
//! the table built from it ([`super::table::IpTable`]) and the agreement checks that compare any
//! two. A leaf module, so readers, tables and checks depend on it and not on each other.

use std::net::IpAddr;

/// The answer for one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpAnswer<'a> {
    /// ISO alpha-2 country code, borrowed from the database.
    Country(&'a str),
    /// A public address the database has no country for.
    NotFound,
    /// A private, loopback or otherwise reserved address (never looked up): the range's name.
    Reserved(&'static str),
}

/// Anything that answers an address with a country: the mmdb reader, and later tables built
/// from it. Agreement checks compare any two.
pub trait CountryLookup {
    /// Country of `ip`, with reserved ranges answered as such.
    fn country(&self, ip: IpAddr) -> IpAnswer<'_>;
}
