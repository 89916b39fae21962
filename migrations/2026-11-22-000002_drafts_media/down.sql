DROP TABLE uploads;
DROP TABLE post_media;
DROP TABLE media;
DROP TABLE review_events;
DROP TABLE posts;
DROP TABLE service_secrets;
