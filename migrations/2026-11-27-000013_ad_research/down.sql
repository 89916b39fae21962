DROP TABLE ad_research_quota;
DROP TABLE ad_credit_ledger;
DROP TABLE ad_research_items;
DROP TABLE ad_research;
ALTER TABLE workspaces DROP COLUMN marketplace;
ALTER TABLE organizations
    DROP COLUMN suspended,
    DROP COLUMN price_product_brief,
    DROP COLUMN price_topic_keyword;
