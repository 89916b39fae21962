DROP TABLE events;
DROP FUNCTION events_number();
DROP SEQUENCE event_seq;
