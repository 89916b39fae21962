DROP TABLE ad_proposals;
DROP TABLE ads;
DROP TABLE ad_campaign_days;
DROP TABLE ad_campaigns;
DROP TABLE ad_accounts;
ALTER TABLE workspaces DROP COLUMN monthly_ad_cap, DROP COLUMN ad_cap_currency;
