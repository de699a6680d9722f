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
        lhs, params = self.process_lhs(compiler, connection)
        return f"{lhs} = ANY(%s)", [*params, list(self.rhs)]


Field.register_lookup(AnyOf)
ForeignObject.register_lookup(AnyOf)  # related fields keep lookups of their own
