//! Which product a research item names: a link on a known marketplace, or a bare item id read
//! on the workspace's marketplace (docs/decisions.md, "Ad research").
//!
//! A product is known by its marketplace and the marketplace's own item id, so the same product
//! reached through two links (a share link with tracking parameters, the mobile site, another
//! country's domain of the same marketplace) is one cache entry.

use url::Url;

fleetdesk_kernel::text_enum! {
    /// A marketplace research can read. Stored and sent as its text.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum Marketplace {
        Shopee => "shopee",
        Taobao => "taobao",
        Tmall => "tmall",
        Alibaba1688 => "1688",
        Jd => "jd",
        Momo => "momo",
        Pchome => "pchome",
        Amazon => "amazon",
        Rakuten => "rakuten",
        Coupang => "coupang",
    }
}

impl Marketplace {
    /// A workspace's marketplace as stored: what a bare item id is read on. Shopee when the
    /// text names none the service reads.
    pub fn of_workspace(stored: &str) -> Marketplace {
        Marketplace::parse(stored).unwrap_or(Marketplace::Shopee)
    }

    /// The label of the marketplace's registrable domain (`momoshop.com.tw` is momo's).
    fn domain_label(self) -> &'static str {
        match self {
            Marketplace::Momo => "momoshop",
            other => other.as_str(),
        }
    }

    /// The marketplace whose domain `host` (as written: lower case, labels of `a-z`, `0-9`
    /// and `-`) is, in any country: the marketplace's label followed only by a public suffix
    /// (`com`, `co.jp`, `com.tw`, `tw` …). `shopee.example.com` and `my-shopee.com` are no
    /// marketplace.
    pub fn of_host(host: &str) -> Option<Marketplace> {
        let labels: Vec<&str> = host.split('.').collect();
        let plain = |l: &&str| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        };
        if !labels.iter().all(plain) {
            return None;
        }
        Marketplace::ALL.into_iter().find(|m| {
            labels
                .iter()
                .rposition(|l| *l == m.domain_label())
                .is_some_and(|at| is_public_suffix(&labels[at + 1..]))
        })
    }
}

/// The JSON Schema pattern of a product item: exactly what [`parse_product`] reads as a
/// marketplace product or a bare id (its host, not yet whether the path names a product,
/// which is a refusal of its own). Written for ECMA-262 and Python alike: ASCII classes only.
pub const PRODUCT_PATTERN: &str = concat!(
    "^([0-9]{6,20}|(https?://)?([a-z0-9-]+\\.)*",
    "(shopee|taobao|tmall|1688|jd|momoshop|pchome|amazon|rakuten|coupang)",
    "\\.((com|net|co|org)(\\.[a-z]{2})?|[a-z]{2})/[!-~]*)$"
);

/// `com`, `net`, a country code, or a second level under a country code (`co.jp`, `com.tw`).
fn is_public_suffix(labels: &[&str]) -> bool {
    let generic = |l: &str| matches!(l, "com" | "net" | "co" | "org");
    let country = |l: &str| l.len() == 2 && l.bytes().all(|b| b.is_ascii_lowercase());
    match labels {
        [tld] => generic(tld) || country(tld),
        [second, tld] => generic(second) && country(tld),
        _ => false,
    }
}

/// A product to research: where, its id there, and the text it was given as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Product {
    pub marketplace: Marketplace,
    /// The marketplace's item id (Shopee's is `<shop>.<item>`, Amazon's the ASIN).
    pub item_id: String,
}

impl Product {
    /// What the cache and the provider know the product by: `<marketplace>:<item id>`.
    pub fn key(&self) -> String {
        format!("{}:{}", self.marketplace, self.item_id)
    }
}

/// Why an item is no product.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProductError {
    /// Not a link of a known marketplace ([`PRODUCT_PATTERN`]), and not a bare item id of
    /// 6-20 digits.
    NotMarketplace,
    /// A link of the marketplace that names no product page.
    NoProduct(Marketplace),
}

impl ProductError {
    pub fn message(&self) -> String {
        match self {
            ProductError::NotMarketplace => {
                "must be a product link on a known marketplace (Shopee, Taobao, \
                 Tmall, 1688, JD, momo, PChome, Amazon, Rakuten, Coupang; host in lower case, \
                 http or https or no scheme, no port, printable ASCII) or a bare item id of \
                 6-20 digits"
                    .to_owned()
            }
            ProductError::NoProduct(m) => format!("a {m} link that names no product page"),
        }
    }
}

/// Reads one research item as written (no white space around it): a bare item id of 6-20
/// digits is read on `home` (the workspace's marketplace); anything else must be a link of the
/// shape [`PRODUCT_PATTERN`] states (a marketplace's host in lower case after an optional
/// `http://` or `https://`, then `/` and printable ASCII) to a product page of the marketplace.
pub fn parse_product(item: &str, home: Marketplace) -> Result<Product, ProductError> {
    if (6..=20).contains(&item.len()) && item.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Product {
            marketplace: home,
            item_id: item.to_owned(),
        });
    }
    let rest = item
        .strip_prefix("https://")
        .or_else(|| item.strip_prefix("http://"))
        .unwrap_or(item);
    let (host, path) = rest.split_once('/').ok_or(ProductError::NotMarketplace)?;
    if !path.bytes().all(|b| (b'!'..=b'~').contains(&b)) {
        return Err(ProductError::NotMarketplace);
    }
    let marketplace = Marketplace::of_host(host).ok_or(ProductError::NotMarketplace)?;
    let url = Url::parse(&format!("https://{rest}")).map_err(|_| ProductError::NotMarketplace)?;
    let item_id = item_id(marketplace, &url).ok_or(ProductError::NoProduct(marketplace))?;
    Ok(Product {
        marketplace,
        item_id,
    })
}

fn digits(s: &str) -> Option<&str> {
    (!s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit())).then_some(s)
}

fn query(url: &Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The item id a product page's link carries, by the marketplace's own link shapes.
fn item_id(marketplace: Marketplace, url: &Url) -> Option<String> {
    let segments: Vec<&str> = url
        .path_segments()
        .map(|s| s.filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    match marketplace {
        // /product/<shop>/<item>, or /<title>-i.<shop>.<item>
        Marketplace::Shopee => match segments.as_slice() {
            ["product", shop, item, ..] => Some(format!("{}.{}", digits(shop)?, digits(item)?)),
            [titled, ..] => {
                let (_, ids) = titled.rsplit_once("-i.")?;
                let (shop, item) = ids.split_once('.')?;
                Some(format!("{}.{}", digits(shop)?, digits(item)?))
            }
            [] => None,
        },
        // item.htm?id=<digits>
        Marketplace::Taobao | Marketplace::Tmall => {
            query(url, "id").and_then(|id| digits(&id).map(str::to_owned))
        }
        // /offer/<digits>.html
        Marketplace::Alibaba1688 => match segments.as_slice() {
            ["offer", page] => digits(page.strip_suffix(".html")?).map(str::to_owned),
            _ => None,
        },
        // /<digits>.html, or /product/<digits>.html
        Marketplace::Jd => match segments.as_slice() {
            [page] | ["product", page] => digits(page.strip_suffix(".html")?).map(str::to_owned),
            _ => None,
        },
        // GoodsDetail.jsp?i_code=<digits>
        Marketplace::Momo => query(url, "i_code").and_then(|id| digits(&id).map(str::to_owned)),
        // /prod/<id>, ids like DYAJ9A-A900B51UP
        Marketplace::Pchome => match segments.as_slice() {
            ["prod", id, ..]
                if (6..=40).contains(&id.len())
                    && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') =>
            {
                Some(id.to_ascii_uppercase())
            }
            _ => None,
        },
        // /dp/<ASIN>, /<title>/dp/<ASIN>, /gp/product/<ASIN>
        Marketplace::Amazon => {
            let asin = segments
                .windows(2)
                .find(|w| w[0] == "dp" || (w[0] == "product" && segments.first() == Some(&"gp")))
                .map(|w| w[1])?;
            (asin.len() == 10 && asin.bytes().all(|b| b.is_ascii_alphanumeric()))
                .then(|| asin.to_ascii_uppercase())
        }
        // item.rakuten.co.jp/<shop>/<item>/, or /shop/<shop>/product/<item>/
        Marketplace::Rakuten => {
            let plain = |s: &str| {
                !s.is_empty()
                    && s.len() <= 80
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
            };
            match segments.as_slice() {
                ["shop", shop, "product", item, ..] | [shop, item]
                    if plain(shop) && plain(item) =>
                {
                    Some(format!(
                        "{}/{}",
                        shop.to_ascii_lowercase(),
                        item.to_ascii_lowercase()
                    ))
                }
                _ => None,
            }
        }
        // /vp/products/<digits>
        Marketplace::Coupang => match segments.as_slice() {
            ["vp", "products", id, ..] => digits(id).map(str::to_owned),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(item: &str) -> Result<String, ProductError> {
        parse_product(item, Marketplace::Shopee).map(|p| p.key())
    }

    #[test]
    fn a_workspace_reads_on_its_marketplace_or_shopee() {
        assert_eq!(Marketplace::of_workspace("momo"), Marketplace::Momo);
        assert_eq!(Marketplace::of_workspace("ebay"), Marketplace::Shopee);
    }

    #[test]
    fn reads_each_marketplaces_product_links() {
        let cases = [
            (
                "https://shopee.tw/product/123456/7890123",
                "shopee:123456.7890123",
            ),
            (
                "https://shopee.co.id/Serum-Wajah-i.123456.7890123?sp_atk=x",
                "shopee:123456.7890123",
            ),
            ("shopee.com.my/product/1/2", "shopee:1.2"),
            (
                "https://item.taobao.com/item.htm?spm=a1z10&id=612345678901",
                "taobao:612345678901",
            ),
            (
                "https://detail.tmall.com/item.htm?id=612345678901",
                "tmall:612345678901",
            ),
            (
                "https://detail.tmall.hk/item.htm?id=612345678901",
                "tmall:612345678901",
            ),
            (
                "https://detail.1688.com/offer/612345678901.html",
                "1688:612345678901",
            ),
            ("https://item.jd.com/100012043978.html", "jd:100012043978"),
            ("https://item.jd.hk/100012043978.html", "jd:100012043978"),
            (
                concat!(
                    "https://www.momoshop.com.tw/goods/GoodsDetail.jsp",
                    "?i_code=10234567&str_category_code=1"
                ),
                "momo:10234567",
            ),
            (
                "https://24h.pchome.com.tw/prod/DYAJ9A-A900B51UP",
                "pchome:DYAJ9A-A900B51UP",
            ),
            (
                "https://www.amazon.co.jp/Some-Title/dp/B08N5WRWNW/ref=sr_1_1",
                "amazon:B08N5WRWNW",
            ),
            (
                "https://www.amazon.com/gp/product/b08n5wrwnw",
                "amazon:B08N5WRWNW",
            ),
            (
                "https://item.rakuten.co.jp/shop-a/item_9/",
                "rakuten:shop-a/item_9",
            ),
            (
                "https://www.rakuten.com.tw/shop/shopa/product/abc123/",
                "rakuten:shopa/abc123",
            ),
            (
                "https://www.coupang.com/vp/products/7335597976?itemId=1",
                "coupang:7335597976",
            ),
            (
                "https://tw.coupang.com/vp/products/7335597976",
                "coupang:7335597976",
            ),
        ];
        for (link, want) in cases {
            assert_eq!(key(link).as_deref(), Ok(want), "{link}");
        }
    }

    #[test]
    fn a_bare_id_of_6_to_20_digits_is_read_on_the_home_marketplace() {
        assert_eq!(
            parse_product("123456", Marketplace::Momo).map(|p| p.key()),
            Ok("momo:123456".into())
        );
        assert_eq!(key(" 123456"), Err(ProductError::NotMarketplace));
        assert_eq!(
            key(&"1".repeat(20)),
            Ok(format!("shopee:{}", "1".repeat(20)))
        );
        assert_eq!(key("12345"), Err(ProductError::NotMarketplace));
        assert_eq!(key(&"1".repeat(21)), Err(ProductError::NotMarketplace));
    }

    #[test]
    fn other_sites_and_look_alike_hosts_are_no_marketplace() {
        for link in [
            "https://example.com/product/1/2",
            "https://shopee.example.com/product/1/2",
            "https://my-shopee.com/product/1/2",
            "https://shopee.tw.evil.net/product/1/2",
            "ftp://shopee.tw/product/1/2",
            "https://user:pw@shopee.tw/product/1/2",
            "https://shopee.tw:443/product/1/2",
            "https://Shopee.tw/product/1/2",
            "HTTPS://shopee.tw/product/1/2",
            "https://shopee.tw/product/1/2 x",
            "https://shopee.tw/product/1/\u{1c}2",
            "https://shopee.tw.jp/product/1/2",
            "https://shopee..tw/product/1/2",
            "shopee.tw",
            "serum",
            "",
        ] {
            assert_eq!(key(link), Err(ProductError::NotMarketplace), "{link}");
        }
    }

    /// The schema's pattern matches exactly the items `parse_product` reads (a product, or a
    /// marketplace link naming none): what a client generating from the description sends is
    /// never refused as no marketplace, and what it must not send is.
    #[test]
    fn the_pattern_says_what_is_read() {
        let pattern = regex::Regex::new(PRODUCT_PATTERN).unwrap();
        let hosts = [
            "shopee.tw",
            "www.shopee.co.id",
            "shopee.com",
            "shopee.co",
            "shopee.com.tw",
            "a-b.1688.com",
            "jd.hk",
            "m.momoshop.com.tw",
            "24h.pchome.com.tw",
            "amazon.co.jp",
            "rakuten.co.jp",
            "tw.coupang.com",
            "shopee.shopee.tw",
            "shopee.tw.jp",
            "shopee",
            "Shopee.tw",
            "shopee.TW",
            "shopee..tw",
            ".shopee.tw",
            "shopee.tw.",
            "shopee.tw:80",
            "u@shopee.tw",
            "shopee.c",
            "shopee.coo",
            "shopee.net.org",
            "myshopee.tw",
            "momo.com.tw",
            "shopee.org.tw",
            "shopee.co.tw.tw",
        ];
        let rests = [
            "/product/1/2",
            "/x-i.1.2?y=1#z",
            "/",
            "",
            "/a b",
            "/\u{1c}",
            "/é",
            "?id=1",
            "/dp/B08N5WRWNW",
            "/offer/123.html",
        ];
        let mut items: Vec<String> = vec![
            "123456".into(),
            "12345".into(),
            "1".repeat(20),
            "1".repeat(21),
            " 123456".into(),
            "１２３４５６".into(),
            "abcdef".into(),
        ];
        for scheme in ["", "https://", "http://", "HTTPS://", "ftp://", "https:/"] {
            for host in hosts {
                for rest in rests {
                    items.push(format!("{scheme}{host}{rest}"));
                }
            }
        }
        for item in &items {
            let read = !matches!(
                parse_product(item, Marketplace::Shopee),
                Err(ProductError::NotMarketplace)
            );
            assert_eq!(pattern.is_match(item), read, "{item:?}");
        }
    }

    #[test]
    fn the_last_marketplace_label_decides() {
        assert_eq!(
            key("https://shopee.shopee.tw/product/1/2").as_deref(),
            Ok("shopee:1.2")
        );
        assert_eq!(
            key("https://shopee.amazon.com/dp/B08N5WRWNW").as_deref(),
            Ok("amazon:B08N5WRWNW")
        );
    }

    #[test]
    fn a_marketplace_link_without_a_product_is_named_as_such() {
        for (link, m) in [
            ("https://shopee.tw/", Marketplace::Shopee),
            ("https://shopee.tw/product/abc/1", Marketplace::Shopee),
            ("https://item.taobao.com/item.htm", Marketplace::Taobao),
            ("https://www.amazon.com/dp/short", Marketplace::Amazon),
            (
                "https://www.coupang.com/np/search?q=serum",
                Marketplace::Coupang,
            ),
            ("shopee.tw/", Marketplace::Shopee),
        ] {
            assert_eq!(key(link), Err(ProductError::NoProduct(m)), "{link}");
        }
    }
}
