DROP TABLE ad_picks;
ALTER TABLE organizations DROP COLUMN next_pick;
