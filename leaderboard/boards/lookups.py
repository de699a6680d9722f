"""`field__any=[...]`: membership in a list passed as one array parameter on PostgreSQL.

A board reads the figures of thousands of runs by id; `__in` binds one parameter per id, and
binding 10,000 of them costs more than the query itself.
"""

from django.db.models import Field, ForeignObject, Lookup


class AnyOf(Lookup):
    lookup_name = "any"
    prepare_rhs = False

    def as_sql(self, compiler, connection):  # other databases: a plain IN
        lhs, params = self.process_lhs(compiler, connection)
        values = list(self.rhs)
        if not values:
            return "1 = 0", params
        return f"{lhs} IN ({', '.join(['%s'] * len(values))})", [*params, *values]

    def as_postgresql(self, compiler, connection):
        # The array typed as the column is: psycopg types a list of small ids as smallint[],
        # and a bigint column against a smallint array is compared element by element,
        # where an array of its own type is hashed once (1,000 run ids over a slice of 10,000
        # rows: 48-95 ms as smallint[], 15 ms as bigint[]).
        lhs, params = self.process_lhs(compiler, connection)
        return f"{lhs} = ANY(%s::{self.lhs.output_field.cast_db_type(connection)}[])", \
            [*params, list(self.rhs)]


Field.register_lookup(AnyOf)
ForeignObject.register_lookup(AnyOf)  # related fields keep lookups of their own
